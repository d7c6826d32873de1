# The image every component in deploy/ runs: `docker build -t pumice:0.1.0 .` from the repository root.
FROM python:3.11-slim

COPY pyproject.toml README.md /src/
COPY src /src/src
RUN pip install --no-cache-dir /src && rm -rf /src \
    && useradd --system --uid 65532 --user-group --no-create-home pumice

USER 65532:65532
ENTRYPOINT ["pumice"]
CMD ["--help"]
