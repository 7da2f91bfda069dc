"""Recommendation endpoints: split plans, machine sizing, parametrize cuts, matrix reduction."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["recommendations"])
