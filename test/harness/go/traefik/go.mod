// Helper module: builds Traefik (the test cluster's ingress controller) at a pinned version.
module tollgate.dev/harness/traefik

go 1.26.0

require github.com/traefik/traefik/v3 v3.7.13
