# Henge for Spark: the `henge` command (API + scheduling loop, migrations, admin CLI).
#
#   docker build -t henge .
#   docker run --rm -e HENGE_DATABASE_URL=... henge migrate
#   docker run --rm -p 8080:8080 -e HENGE_DATABASE_URL=... -e HENGE_ADMIN_TOKEN=... henge
#
# Two stages: the builder installs the project from this folder into a virtualenv at
# /opt/henge (henge and the henge-agent distribution it depends on, from agent/, in one pip call
# so the resolver takes henge-agent from here); the final image holds only that virtualenv on a
# slim Python 3.11. The Alembic migrations travel inside the wheel (scheduler/_migrations, see
# pyproject.toml), so `henge migrate` works from the image with nothing else copied. Every
# dependency ships manylinux wheels, so neither stage needs a compiler. The image runs the core as
# plain Python: the mypyc build of a development checkout (make setup) stays out of the context
# (.dockerignore), see scheduler/compiled.py.
#
# tests/helm/test_dockerfile.py replays the builder's RUN lines in a fresh venv and runs the
# installed `henge` (keep the builder's RUN lines plain shell: that test executes them).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- builder: project -> /opt/henge ------------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
COPY pyproject.toml README.md alembic.ini ./
COPY migrations ./migrations
COPY scheduler ./scheduler
COPY agent ./agent

RUN python -m venv /opt/henge
RUN /opt/henge/bin/pip install ./agent .

# ---- final: the virtualenv only, as a non-root user --------------------------------------
FROM ${PYTHON_IMAGE}

LABEL org.opencontainers.image.title="henge" \
      org.opencontainers.image.description="Henge for Spark: SLO-driven scheduler for Spark Structured Streaming jobs" \
      org.opencontainers.image.licenses="Apache-2.0"

RUN groupadd --system --gid 10001 henge \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/henge --create-home \
        --shell /usr/sbin/nologin henge

COPY --from=builder /opt/henge /opt/henge

ENV PATH=/opt/henge/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HENGE_LOG_FORMAT=json

WORKDIR /home/henge
USER 10001:10001
EXPOSE 8080

ENTRYPOINT ["henge"]
CMD ["serve", "--host", "0.0.0.0"]
