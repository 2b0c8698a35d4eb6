# Exosphere in a container: `docker build -t exosphere .`, or `docker compose up --build` with
# compose.yaml. The runtime image needs DATABASE_URL: it has no PostgreSQL server binaries, so
# the managed local cluster of `exosphere serve` is not available in it.
#
# scripts/check-container-runtime.sh simulates the runtime stage on a machine without a container
# engine; it reads the runtime packages from this file, so keep them in the one `apt-get install`.

# Build stage: the official Swift image for Debian 12, the same system as the runtime stage.
FROM swift:6.3-bookworm AS build
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends pkg-config libpq-dev libssl-dev libvips-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The whole package (tests too: the manifest names their directories); .dockerignore keeps out
# build products and local state.
COPY . .
# Exactly the release build of the README and CI.
RUN scripts/build-release.sh /out

# Runtime stage. The Swift runtime is linked statically, so the binary needs only glibc,
# libstdc++, libpq, OpenSSL and libvips (which only the thumbnail helper processes,
# `exosphere-thumbnailer`, call; with its decoders, HEIC's libheif and libde265 among them);
# ca-certificates is for DATABASE_URLs with sslmode=verify-full and for the SMTP relay's
# certificate (smtps:// and smtp:// verify it against the system's store).
FROM debian:bookworm-slim
# Unpinned on purpose: Debian stable only takes security and bug fixes.
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpq5 libssl3 libstdc++6 libvips42 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 exosphere \
    && useradd --system --uid 10001 --gid exosphere --no-create-home --home-dir /app --shell /usr/sbin/nologin exosphere \
    && mkdir -p /var/lib/exosphere/images /var/lib/exosphere/mail \
    && chown 10001:10001 /var/lib/exosphere/images /var/lib/exosphere/mail
WORKDIR /app
# Owned by root: the server cannot modify its own binary (which carries its migrations).
COPY --from=build /out/ /app/
# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
# The filesystem image storage (--image-storage filesystem) writes here; mount a volume on it.
# Without EXOSPHERE_SMTP_URL, mail is written as .eml files to the dev mailbox, EXOSPHERE_MAIL_DIR.
# Docker's default seccomp profile refuses unshare(2) to a container without CAP_SYS_ADMIN, so a
# thumbnail helper cannot give itself an empty root there: best-effort starts anyway (with a
# warning; the container's own root still bounds what a helper sees). Under a profile that allows
# unshare (Podman, Kubernetes' Unconfined or a custom profile), set it back to required.
ENV HOST=0.0.0.0 PORT=8080 EXOSPHERE_IMAGE_DIR=/var/lib/exosphere/images EXOSPHERE_MAIL_DIR=/var/lib/exosphere/mail \
    EXOSPHERE_THUMBNAIL_ISOLATION=best-effort
EXPOSE 8080
# GET /healthz over a plain socket (no curl in the image); reads the same HOST and PORT.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/app/exosphere", "healthcheck"]
ENTRYPOINT ["/app/exosphere"]
CMD ["serve"]
