# One image for the web app and the worker; docker-compose.yml picks the command.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY requirements requirements
COPY client client
COPY app app
COPY ingest ingest
COPY analysis analysis
COPY figures figures
COPY notify notify
COPY model model
COPY demo demo
COPY pgcodec pgcodec
COPY migrations migrations
# The locked versions without the embedded extra: this image's PostgreSQL is its own service
# (DATABASE_URL); the server's distribution carries the client's import package from client/.
RUN pip install --no-cache-dir -r requirements/server.lock .
ENV LAPTIME_HOST=0.0.0.0
EXPOSE 8000
CMD ["laptime", "serve", "--host", "0.0.0.0"]
