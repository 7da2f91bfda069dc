"""Pydantic models of the API's answers: what the OpenAPI schema says each route returns."""
