"""PostgreSQL wire encodings built with numpy and pandas: below both `ingest` (which writes
with COPY) and `app.db` (which reads binary COPY), importing neither."""
