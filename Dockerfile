# syntax=docker/dockerfile:1
# The pairwise CLI (judge, serve, rules, simulate, webhook) as a static
# binary on distroless, running as a non-root user. Multi-arch:
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/pairwise:TAG --push .
# (docs/integrations.md#container)

# The build runs on the builder's own platform and cross-compiles: no
# emulation, one Go toolchain, the patch release CI tests with (the official
# images set GOTOOLCHAIN=local, so an image older than go.mod's go line
# fails the build). The base images are pinned by tag; pin them by digest
# in your own registry.
FROM --platform=$BUILDPLATFORM golang:1.26.8 AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/pairwise ./cmd/pairwise

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pairwise /usr/local/bin/pairwise
COPY rules/pairwise.yaml /etc/pairwise/pairwise.yaml
USER 65532:65532
# A crash aborts (SIGABRT, exit 134) instead of Go's exit status 2, which
# pairwise judge uses for rollback. The image has no init: as PID 1,
# pairwise runs itself as a child, which can abort, and forwards signals.
ENV GOTRACEBACK=crash
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/pairwise"]
# The usage. Give a command, for example:
#   docker run IMAGE serve --listen :8080 --config /etc/pairwise/pairwise.yaml --prometheus http://prometheus:9090
CMD ["--help"]
