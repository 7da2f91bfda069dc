# One image for the web app and the worker; docker-compose.yml picks the command.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY client client
COPY app app
COPY ingest ingest
COPY analysis analysis
COPY dashboards dashboards
COPY pgcodec pgcodec
COPY migrations migrations
RUN pip install --no-cache-dir ./client .
ENV LAPTIME_HOST=0.0.0.0
EXPOSE 8000
CMD ["laptime", "serve", "--host", "0.0.0.0"]
