# One image for every kolo component: a static `kolo` binary on an empty
# base. Build from the repository root:
#   docker build -t kolo:0.1.0 .
# (deploy/kustomization.yaml refers to the image as kolo:0.1.0.)

FROM rust:1.90-bookworm AS build
WORKDIR /src
COPY . .
# A static-pie binary linked against glibc's static libraries (TLS is
# rustls + ring: no OpenSSL). The components reach the API server and the
# kubelet by IP address (KUBERNETES_SERVICE_HOST, status.hostIP), so no
# NSS modules are needed at run time.
RUN RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --release --locked --target x86_64-unknown-linux-gnu -p kolo \
 && strip -o /kolo target/x86_64-unknown-linux-gnu/release/kolo

FROM scratch
COPY --from=build /kolo /kolo
# Not root by default; the agent's DaemonSet runs it as root, as it must.
USER 65532:65532
ENTRYPOINT ["/kolo"]
