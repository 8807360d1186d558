# Henge for Spark: the `henge` command (API + scheduling loop, migrations, admin CLI).
#
#   docker build -t henge .
#   docker run --rm -e HENGE_DATABASE_URL=... henge migrate
#   docker run --rm -p 8080:8080 -e HENGE_DATABASE_URL=... -e HENGE_ADMIN_TOKEN=... henge
#
# Two stages: the builder installs the project from this folder into a virtualenv at
# /opt/henge (henge and the henge-agent distribution it depends on, from agent/, in one pip call
# so the resolver takes henge-agent from here) and compiles the core with mypyc, as `make setup`
# does in a development checkout (scripts/compile_core.py, scheduler/compiled.py): the image's
# decide() runs at the speed the benchmarks measure. The final image holds only that virtualenv
# on a slim Python 3.11, without the compiler. The Alembic migrations travel inside the wheel
# (scheduler/_migrations, see pyproject.toml), so `henge migrate` works from the image with
# nothing else copied. A development checkout's own build stays out of the context
# (.dockerignore).
#
# tests/image/ builds this file with buildah (scripts/ensure-image.sh) and runs the image.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- builder: project -> /opt/henge ------------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

# The compiler and the Python headers, for mypyc: the official python images carry the
# headers, a base with Debian's Python needs python3-dev.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && if ! python -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then \
        apt-get install -y --no-install-recommends python3-dev; \
    fi \
 && rm -rf /var/lib/apt/lists/*
# mypyc (it comes with mypy) and setuptools in a virtualenv of their own: not in the image.
RUN python -m venv /opt/build \
 && /opt/build/bin/pip install "mypy>=1.10" "setuptools>=65"

WORKDIR /src
COPY pyproject.toml README.md alembic.ini ./
COPY migrations ./migrations
COPY scheduler ./scheduler
COPY agent ./agent
COPY scripts/compile_core.py ./scripts/

RUN python -m venv /opt/henge
RUN /opt/henge/bin/pip install ./agent .
# The extensions go beside the installed sources (the group's library beside the package), and
# are touched last: `henge` refuses a build older than the sources it sits beside. The server
# needs neither pip nor setuptools at run time, nor the asyncio half of the Kubernetes client
# (kubernetes/aio, about 70 MB), which scheduler/kube never imports.
RUN /opt/build/bin/python scripts/compile_core.py --python-executable /opt/henge/bin/python \
 && site=$(/opt/henge/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
 && find scheduler -name '*.so' -exec cp --parents {} "$site" \; \
 && cp henge_core__mypyc*.so "$site" \
 && find "$site/scheduler" "$site"/henge_core__mypyc*.so -name '*.so' -exec touch {} + \
 && /opt/henge/bin/python -c 'import scheduler.core.decide as d; assert d.__file__.endswith(".so"), d.__file__' \
 && /opt/henge/bin/pip uninstall --yes --quiet pip setuptools \
 && rm -rf "$site/kubernetes/aio"

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
