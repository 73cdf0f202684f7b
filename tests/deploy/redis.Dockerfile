# A Redis image for the deployment test (tests/deploy): the chart's default image
# (docker.io/library/redis) cannot be pulled on machines without a registry, so this
# one is built from Debian's redis-server package on the same base as the project's
# images. Like the official image: redis-server and redis-cli on the PATH, user redis
# with UID/GID 999 (the chart's podSecurityContext), /data as the working directory.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN groupadd --system --gid 999 redis \
 && useradd --system --uid 999 --gid 999 --home-dir /data --no-create-home redis \
 && apt-get update \
 && apt-get install -y --no-install-recommends redis-server redis-tools \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER 999:999
EXPOSE 6379
CMD ["redis-server"]
