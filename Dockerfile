# syntax=docker/dockerfile:1
# lockstep's image: the webhook binary (cmd/webhook) as /lockstep, and the
# embedded broker's (cmd/broker) as /broker for its own Deployment, static,
# on distroless as a non-root user. Build from the repository root:
#
#   docker build -t registry.example/lockstep:v0.1.0 .
#
# Multi-platform: docker buildx build --platform linux/amd64,linux/arm64 ...
# (cross-compiled by Go in the build stage; no emulation needed).

# The Go version of go.mod (go 1.26.8).
ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
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
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lockstep /lockstep
# The embedded broker's Deployment runs /broker instead (as root with only
# CAP_SETUID and CAP_SETGID, to start each action as a user of its own).
COPY --from=build /out/broker /broker
USER 65532:65532
# 9443 webhook (TLS), 8080 metrics, 8081 health and readiness.
EXPOSE 9443 8080 8081
ENTRYPOINT ["/lockstep"]
