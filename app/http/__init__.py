"""The HTTP pieces both edges share: the connection and auth dependencies, query filters, the
error body and its mapping, security headers, sessions, request middleware and deadlines."""
