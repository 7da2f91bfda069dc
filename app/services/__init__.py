"""The service layer: reads and recommendations both edges (API and pages) call."""
