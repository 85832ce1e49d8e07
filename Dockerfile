# The stormsim image: one static binary on distroless, no shell. `make image`
# builds it (IMAGE ?= stormsim:dev); deploy/k8s runs it as the shards of a
# sharded live run, the merge, and `stormsim up` (docs/distributed.md).
#
# `stormsim up` starts its reference replicas by running its own binary
# (`stormsim serve`), so the image needs nothing else for them. It holds no
# redis-server: a design that keeps its sessions or events in Redis needs
# --redis-url (deploy/k8s has a Redis Deployment). It holds no Node.js: the
# ts-sdk server and clients (server = "ts-sdk", client.impl = "ts-sdk") do
# not run in it.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -o /out/stormsim ./cmd/stormsim

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/stormsim /usr/local/bin/stormsim
# The shipped scenarios, stormsim's default --file in its working folder;
# deploy/k8s mounts its own scenarios.toml from a ConfigMap instead.
WORKDIR /stormsim
COPY scenarios.toml /stormsim/scenarios.toml
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/stormsim"]
CMD ["--help"]
