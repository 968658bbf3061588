# storhd in containers. A build stage (Debian bookworm, the -dev packages,
# cmake) and two slim stages with runtime libraries only:
#   runtime (the default)  storhd and the storh CLI, as the non-root user
#                          storhd, the storage root a volume at /data
#   trial                  the HTTP trial runner (storh-trial, wrk) and the
#                          deployment's key maker (deploy/trial/entrypoint.sh)
#   docker build -t localhost/storhd .
#   docker build --target trial -t localhost/storhd-trial .
# (podman build --format docker works the same; scripts/container.sh.)

FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev make cmake pkg-config \
      libmicrohttpd-dev libjansson-dev libxxhash-dev libcurl4-openssl-dev libsqlite3-dev \
      libpq-dev libjwt-dev libssl-dev \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY engines engines
COPY mirror mirror
COPY service service
COPY bench bench
COPY client client
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
 && cmake --build /build -j"$(nproc)" \
 && DESTDIR=/out cmake --install /build --prefix /usr/local

FROM debian:bookworm-slim AS trial
RUN apt-get update \
 && apt-get install -y --no-install-recommends wrk openssl libcurl4 libjansson4 libxxhash0 \
      libpq5 libjwt0 libssl3 \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10002 --home-dir /results --shell /usr/sbin/nologin trial
COPY --from=build /out/usr/local/bin/storh-trial /out/usr/local/bin/storh-token /usr/local/bin/
COPY --from=build /out/usr/local/share/storhd /usr/local/share/storhd
COPY deploy/trial/entrypoint.sh /usr/local/bin/storhd-trial-entrypoint
ENTRYPOINT ["storhd-trial-entrypoint"]
CMD ["run"]

FROM debian:bookworm-slim AS runtime
# curl is only for the HEALTHCHECK
RUN apt-get update \
 && apt-get install -y --no-install-recommends libmicrohttpd12 libjansson4 libxxhash0 \
      libsqlite3-0 libpq5 libjwt0 libssl3 curl \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin storhd \
 && mkdir /data && chown storhd:storhd /data
COPY --from=build /out/usr/local/bin/storhd /out/usr/local/bin/storh /usr/local/bin/
USER storhd
VOLUME /data
# without a JWT key storhd refuses to serve /v1 on a non-loopback address:
# set STORHD_JWT_PUBLIC_KEY (or STORHD_JWKS), or STORHD_INSECURE_NO_AUTH=true
ENV STORHD_ROOT=/data STORHD_LISTEN=0.0.0.0:8080
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS -o /dev/null http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["storhd"]
