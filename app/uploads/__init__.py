"""Receiving uploads: the ASGI guard (token and size before the body), the typed form, the
routes that commit the raw files before answering, and the count of outcomes."""
