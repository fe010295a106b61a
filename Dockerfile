# One image for every kolo component: a static `kolo` binary on an empty
# base. Build from the repository root:
#   docker build -t kolo:0.1.0 .
# (deploy/kustomization.yaml refers to the image as kolo:0.1.0.)

FROM rust:1.90-bookworm AS build
RUN rustup target add x86_64-unknown-linux-musl \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# musl gives a fully static binary (TLS is rustls + ring: no OpenSSL).
RUN cargo build --release --locked --target x86_64-unknown-linux-musl -p kolo \
 && cp target/x86_64-unknown-linux-musl/release/kolo /kolo

FROM scratch
COPY --from=build /kolo /kolo
# Not root by default; the agent's DaemonSet runs it privileged as it must.
USER 65532:65532
ENTRYPOINT ["/kolo"]
