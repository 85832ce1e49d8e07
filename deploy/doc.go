// Package deploy holds the checks of stormsim's Kubernetes manifests
// (k8s/): every manifest decodes strictly with the Kubernetes API types,
// the kustomizations build, and the fields a sharded run depends on agree
// with each other, with the image `make image` builds and with the
// scenarios stormsim loads (docs/distributed.md). It is a module of its
// own, so that stormsim's module does not depend on the Kubernetes API.
package deploy
