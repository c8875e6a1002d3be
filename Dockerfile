# syntax=docker/dockerfile:1
# lockstep's image: the webhook binary (cmd/webhook) as /lockstep, and the
# embedded broker's (cmd/broker) as /broker for its own Deployment, static,
# on distroless as a non-root user. Build from the repository root:
#
#   docker build -t registry.example/lockstep:v0.1.0 .
#
# Multi-platform: docker buildx build --platform linux/amd64,linux/arm64 ...
# (cross-compiled by Go in the build stage; no emulation needed).

# Base images are pinned by digest (the multi-platform index), the tag
# beside it saying what it is: a rebuild takes the same images until the
# digests are changed here. The Go version is go.mod's (go 1.26.8).
FROM --platform=$BUILDPLATFORM golang:1.26.8@sha256:3c3e25a4da13fd0478eed2df1eb35a0e667094a7124d3993a6a1d30f71c17e79 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
# CGO_ENABLED=0: a static binary, no libc needed at run time.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/lockstep ./cmd/webhook && \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/broker ./cmd/broker

# distroless/static: no shell, no package manager; CA certificates and
# /etc/passwd with the nonroot user (65532) only.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639
COPY --from=build /out/lockstep /lockstep
# The embedded broker's Deployment runs /broker instead (as root with only
# CAP_SETUID and CAP_SETGID, to start each action as a user of its own).
COPY --from=build /out/broker /broker
USER 65532:65532
# 9443 webhook (TLS), 8443 metrics (TLS), 8081 health and readiness.
EXPOSE 9443 8443 8081
ENTRYPOINT ["/lockstep"]
