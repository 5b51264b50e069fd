//! Dockerfiles for `ocibuild import`'s tests, written for them (Python and ML services of
//! the kinds people containerize). Each is `(name, text)`; the tests write them out with
//! the context files they name.

pub const CORPUS: &[(&str, &str)] = &[
    (
        "seed-cuda",
        r#"FROM nvidia/cuda:12.8.1-runtime-ubuntu24.04
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN apt-get update && apt-get install -y python3 python3-pip \
 && pip3 install numpy pillow cupy-cuda12x
COPY . /app
WORKDIR /app
CMD ["python3", "app.py"]
"#,
    ),
    (
        "flask-slim",
        r#"FROM python:3.12-slim
WORKDIR /srv
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY app/ /srv/app/
EXPOSE 5000
CMD ["gunicorn", "-b", "0.0.0.0:5000", "app:create_app()"]
"#,
    ),
    (
        "fastapi-user",
        r#"FROM python:3.11-slim-bookworm
RUN groupadd -g 10001 api && useradd -m -u 10001 -g 10001 -s /bin/bash api
WORKDIR /home/api/service
COPY --chown=api:api service/ ./
RUN pip install fastapi==0.115.0 "uvicorn[standard]" pydantic-settings
USER api
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=5s --retries=3 CMD curl -fsS http://localhost:8000/health || exit 1
CMD uvicorn service.main:app --host 0.0.0.0 --port 8000
"#,
    ),
    (
        "torch-train-cuda",
        r#"FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip git \
    && rm -rf /var/lib/apt/lists/*
RUN pip3 install --no-cache-dir torch torchvision --index-url https://download.pytorch.org/whl/cu124
RUN pip3 install accelerate datasets transformers==4.44.2
COPY train.py /workspace/train.py
WORKDIR /workspace
VOLUME /workspace/checkpoints
ENTRYPOINT ["python3", "train.py"]
CMD ["--epochs", "3"]
"#,
    ),
    (
        "multistage-wheels",
        r#"FROM python:3.12-bookworm AS build
RUN apt-get update && apt-get install -y build-essential
WORKDIR /src
COPY . .
RUN pip wheel --no-deps -w /wheels .

FROM python:3.12-slim-bookworm
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
CMD ["mytool", "--help"]
"#,
    ),
    (
        "source-build-make",
        r#"FROM debian:bookworm AS builder
RUN apt-get update && apt-get install -y gcc make curl ca-certificates
RUN curl -fsSLo /tmp/lz4.tar.gz https://github.com/lz4/lz4/archive/refs/tags/v1.9.4.tar.gz \
 && tar -C /tmp -xzf /tmp/lz4.tar.gz \
 && make -C /tmp/lz4-1.9.4 PREFIX=/opt/lz4 install

FROM debian:bookworm-slim
COPY --from=builder /opt/lz4 /opt/lz4
ENV PATH=/opt/lz4/bin:$PATH
RUN apt-get update && apt-get install -y python3 && apt-get clean
CMD ["lz4", "--version"]
"#,
    ),
    (
        "args-defaults",
        r#"ARG PY=3.11
ARG VARIANT=slim
FROM python:${PY}-${VARIANT}
ARG APP_HOME=/opt/app
ARG PORT
ENV APP_HOME=${APP_HOME} PORT=${PORT:-9000}
WORKDIR $APP_HOME
COPY src/ ${APP_HOME}/src/
RUN pip install requests==2.32.3
EXPOSE ${PORT:-9000}
CMD ["python", "-m", "src"]
"#,
    ),
    (
        "heredoc-setup",
        r#"# syntax=docker/dockerfile:1
FROM debian:trixie
RUN <<EOF
set -e
apt-get update
apt-get install -y python3 python3-numpy
mkdir -p /data /models
EOF
COPY <<EOF /etc/app.conf
threads=4
EOF
CMD ["python3", "-c", "import numpy; print(numpy.__version__)"]
"#,
    ),
    (
        "cache-mounts",
        r#"# syntax=docker/dockerfile:1.7
FROM python:3.13-slim
RUN --mount=type=cache,target=/root/.cache/pip pip install scikit-learn pandas
RUN --mount=type=cache,target=/var/cache/apt apt-get update && apt-get install -y libgomp1
COPY model/ /model/
CMD ["python", "/model/serve.py"]
"#,
    ),
    (
        "secret-mount",
        r#"FROM python:3.12-slim
RUN --mount=type=secret,id=netrc,target=/root/.netrc pip install internal-metrics==1.4.0
COPY . /app
WORKDIR /app
CMD ["python", "main.py"]
"#,
    ),
    (
        "uv-project",
        r#"FROM python:3.12-slim-bookworm
COPY --from=ghcr.io/astral-sh/uv:0.4.20 /uv /bin/uv
ENV UV_COMPILE_BYTECODE=1
WORKDIR /app
RUN uv pip install --system httpx orjson
COPY . /app
CMD ["python", "-m", "app"]
"#,
    ),
    (
        "conda-env",
        r#"FROM continuumio/miniconda3:24.7.1-0
COPY environment.yml /tmp/environment.yml
RUN conda env create -f /tmp/environment.yml -p /opt/env && conda clean -afy
ENV PATH=/opt/env/bin:$PATH
COPY notebooks/ /notebooks/
EXPOSE 8888
CMD ["jupyter", "lab", "--ip=0.0.0.0", "--no-browser"]
"#,
    ),
    (
        "mamba-gpu",
        r#"FROM mambaorg/micromamba:1.5.8
USER root
RUN micromamba install -y -n base -c conda-forge python=3.11 cudatoolkit=11.8 && micromamba clean --all --yes
USER $MAMBA_USER
COPY --chown=$MAMBA_USER:$MAMBA_USER infer.py /home/mambauser/infer.py
CMD ["python", "/home/mambauser/infer.py"]
"#,
    ),
    (
        "healthcheck-volume",
        r#"FROM python:3.11-slim
RUN useradd --create-home --uid 1500 worker
COPY worker/ /opt/worker/
RUN pip install celery==5.4.0 redis
VOLUME ["/var/lib/worker", "/var/log/worker"]
USER worker
HEALTHCHECK --interval=1m --timeout=10s CMD ["celery", "-A", "worker", "inspect", "ping"]
STOPSIGNAL SIGQUIT
ENTRYPOINT ["celery", "-A", "worker"]
CMD ["worker", "--loglevel=info"]
"#,
    ),
    (
        "shell-bash",
        r#"FROM ubuntu:22.04
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update && apt-get install -y python3 python3-venv curl
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install rich typer
ENV PATH=/opt/venv/bin:$PATH
COPY cli.py /usr/local/bin/mycli
RUN chmod 0755 /usr/local/bin/mycli
ENTRYPOINT mycli
"#,
    ),
    (
        "add-url",
        r#"FROM python:3.12-slim
ADD https://raw.githubusercontent.com/example/models/v1/labels.txt /opt/model/labels.txt
ADD weights.tar.gz /opt/model/
COPY serve.py /opt/model/
CMD ["python", "/opt/model/serve.py"]
"#,
    ),
    (
        "dockerignore-app",
        r#"FROM python:3.10-slim
WORKDIR /code
COPY . .
RUN pip install -r requirements.txt
CMD ["python", "manage.py", "runserver", "0.0.0.0:8000"]
EXPOSE 8000
"#,
    ),
    (
        "jupyter-like",
        r#"FROM ubuntu:24.04
LABEL maintainer="data team" org.opencontainers.image.source="https://example.org/nb"
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip tini \
    && apt-get clean && rm -rf /var/lib/apt/lists/*
RUN pip3 install --break-system-packages jupyterlab==4.2.5 matplotlib seaborn
RUN useradd -m -s /bin/bash -u 1000 jovyan && mkdir -p /home/jovyan/work && chown 1000:1000 /home/jovyan/work
USER jovyan
WORKDIR /home/jovyan/work
EXPOSE 8888
ENTRYPOINT ["tini", "--"]
CMD ["jupyter", "lab", "--ip=0.0.0.0"]
"#,
    ),
    (
        "vllm-like",
        r#"ARG CUDA_VERSION=12.4.1
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS base
RUN apt-get update -y && apt-get install -y python3-pip git curl sudo
RUN ln -s /usr/bin/python3 /usr/local/bin/python
WORKDIR /workspace

FROM base AS build
COPY requirements-build.txt requirements-build.txt
RUN --mount=type=cache,target=/root/.cache/pip pip install -r requirements-build.txt
COPY csrc csrc
COPY setup.py setup.py
ENV MAX_JOBS=8
RUN python3 setup.py bdist_wheel --dist-dir=/workspace/dist

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu22.04 AS runtime
RUN apt-get update -y && apt-get install -y python3-pip
COPY --from=build /workspace/dist /dist
RUN pip install /dist/*.whl
ENTRYPOINT ["python3", "-m", "engine.entrypoints.api_server"]
"#,
    ),
    (
        "tgi-like",
        r#"FROM rust:1.80 AS router
WORKDIR /usr/src
COPY router router
RUN cargo build --release --manifest-path router/Cargo.toml

FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04
ENV HF_HOME=/data PORT=80
RUN apt-get update && apt-get install -y --no-install-recommends libssl3 ca-certificates python3 python3-pip
COPY --from=router /usr/src/router/target/release/text-router /usr/local/bin/text-router
RUN pip3 install safetensors sentencepiece
VOLUME /data
EXPOSE 80
ENTRYPOINT ["text-router"]
CMD ["--json-output"]
"#,
    ),
    (
        "pytorch-base",
        r"FROM pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime
RUN pip install lightning==2.4.0 wandb
COPY . /opt/project
WORKDIR /opt/project
ENV WANDB_MODE=offline
CMD python train.py --config configs/default.yaml
",
    ),
    (
        "onbuild-maintainer",
        r#"FROM python:3.9-slim
MAINTAINER ml-platform@example.org
ONBUILD COPY . /app
ONBUILD RUN pip install -r /app/requirements.txt
WORKDIR /app
CMD ["python"]
"#,
    ),
    (
        "scratch-static",
        r#"FROM scratch
COPY bin/ /bin/
ENV APP_MODE=production LOG_LEVEL=info
WORKDIR /srv
EXPOSE 8080 9090/udp
USER 65532:65532
CMD ["/bin/server", "--listen", ":8080"]
"#,
    ),
    (
        "scratch-data",
        r#"FROM scratch
COPY data/ /data/
COPY bin/tool /usr/bin/tool
ENV DATA_DIR=/data
WORKDIR /data
ENTRYPOINT ["/usr/bin/tool"]
CMD ["--check", "/data"]
"#,
    ),
    (
        "scratch-two-stage",
        r#"FROM scratch AS assets
COPY site/ /www/

FROM scratch
COPY site/ /var/www/
COPY conf/server.conf /etc/server.conf
ENV PORT=8081
WORKDIR /var/www
EXPOSE 8081/tcp
CMD ["/var/www/serve", "--port", "8081"]
"#,
    ),
    (
        "streamlit",
        r#"FROM python:3.11-slim
RUN apt-get update && apt-get install -y build-essential curl software-properties-common && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.txt ./requirements.txt
RUN pip3 install -r requirements.txt
COPY . .
EXPOSE 8501
HEALTHCHECK CMD curl --fail http://localhost:8501/_stcore/health
ENTRYPOINT ["streamlit", "run", "app.py", "--server.port=8501", "--server.address=0.0.0.0"]
"#,
    ),
    (
        "rapids-like",
        r#"FROM nvidia/cuda:12.2.2-base-ubuntu22.04
ENV CONDA_DIR=/opt/conda
RUN apt-get update && apt-get install -y wget bzip2 ca-certificates
RUN wget -q https://repo.anaconda.com/miniconda/Miniconda3-py311_24.7.1-0-Linux-x86_64.sh -O /tmp/miniconda.sh \
    && bash /tmp/miniconda.sh -b -p /opt/conda && rm /tmp/miniconda.sh
ENV PATH=$CONDA_DIR/bin:$PATH
RUN conda install -y -c rapidsai -c conda-forge cudf=24.08 python=3.11
WORKDIR /rapids
CMD ["python", "-c", "import cudf"]
"#,
    ),
    (
        "airflow-like",
        r#"FROM python:3.12-slim-bookworm
ARG AIRFLOW_VERSION=2.10.2
ENV AIRFLOW_HOME=/opt/airflow
RUN apt-get update && apt-get install -y --no-install-recommends libpq5 && apt-get clean
RUN groupadd --gid 50000 airflow && useradd --uid 50000 --gid 50000 --home-dir /opt/airflow airflow
RUN pip install --no-cache-dir "apache-airflow==${AIRFLOW_VERSION}" psycopg2-binary
COPY --chown=50000:50000 dags/ /opt/airflow/dags/
USER airflow
EXPOSE 8080
ENTRYPOINT ["airflow"]
CMD ["webserver"]
"#,
    ),
    (
        "opencv-cli",
        r#"FROM debian:trixie-slim
RUN apt-get update \
 && apt-get install -y python3 python3-opencv python3-click \
 && rm -rf /var/lib/apt/lists/*
COPY resize.py /usr/local/bin/resize
RUN chmod 755 /usr/local/bin/resize && ln -s /usr/local/bin/resize /usr/local/bin/thumb
ENTRYPOINT ["/usr/local/bin/resize"]
"#,
    ),
    (
        "git-clone-build",
        r#"FROM python:3.12 AS src
RUN git clone --depth 1 https://github.com/example/tokenizer /build/tokenizer
WORKDIR /build/tokenizer
RUN pip wheel --wheel-dir /build/wheels .

FROM python:3.12-slim
COPY --from=src /build/wheels /tmp/wheels
RUN pip install /tmp/wheels/*.whl
CMD ["python", "-m", "tokenizer"]
"#,
    ),
    (
        "env-legacy-expose",
        r#"FROM python:3.10
ENV APP_ENV production
ENV PYTHONPATH /srv/lib:$PYTHONPATH
COPY lib /srv/lib
RUN pip install --upgrade pip setuptools wheel && pip install gunicorn==22.0.0
EXPOSE 8000/tcp 8443
STOPSIGNAL 15
CMD ["gunicorn", "wsgi:app"]
"#,
    ),
    (
        "ray-serve",
        r#"FROM rayproject/ray:2.35.0-py311-gpu
RUN pip install --no-cache-dir "ray[serve]==2.35.0" torch==2.4.0
COPY serve_app.py /home/ray/serve_app.py
WORKDIR /home/ray
EXPOSE 8000 8265
CMD ["serve", "run", "serve_app:app"]
"#,
    ),
    (
        "target-stages",
        r#"FROM python:3.12-slim AS base
ENV PIP_NO_CACHE_DIR=1
RUN pip install click

FROM base AS test
RUN pip install pytest
COPY tests/ /tests/
CMD ["pytest", "/tests"]

FROM base AS prod
COPY app/ /app/
CMD ["python", "-m", "app"]
"#,
    ),
    (
        "comments-and-ifs",
        r#"FROM ubuntu:24.04
ARG TARGETARCH
RUN apt-get update && apt-get install -y --no-install-recommends \
    python3 \
    # the CLI needs TLS roots
    ca-certificates \
    && rm -rf /var/lib/apt/lists/*
RUN if [ "$TARGETARCH" = "arm64" ]; then \
      echo arm > /etc/arch; \
    else \
      echo x86 > /etc/arch; \
    fi
RUN MODEL_DIR=/models && mkdir -p /models && chown 1000:1000 /models
COPY --chown="1000:1000" infer.py /opt/infer.py
USER 1000
CMD ["python3", "/opt/infer.py"]
"#,
    ),
];

/// Context files each corpus Dockerfile needs (besides an empty directory): `(name, files)`.
pub fn context_files(name: &str) -> &'static [(&'static str, &'static str)] {
    match name {
        "flask-slim" => &[
            ("requirements.txt", "flask==3.0.3\ngunicorn==22.0.0\n"),
            ("app/__init__.py", ""),
        ],
        "dockerignore-app" => &[
            ("requirements.txt", "django==5.1\n"),
            (".dockerignore", ".git\n*.pyc\n.venv\n"),
            ("manage.py", "print('hi')\n"),
        ],
        "streamlit" => &[("requirements.txt", "streamlit==1.38.0\n")],
        "scratch-static" => &[("bin/server", "#!/bin/server\n")],
        "scratch-data" => &[("data/a.csv", "x,y\n1,2\n"), ("bin/tool", "tool\n")],
        "scratch-two-stage" => &[
            ("site/index.html", "<p>hi</p>\n"),
            ("conf/server.conf", "port=8081\n"),
        ],
        _ => &[],
    }
}
