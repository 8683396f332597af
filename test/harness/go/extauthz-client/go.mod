// Helper module: a client of Envoy's ext_authz gRPC API (envoy.service.auth.v3.Authorization),
// built from the published proto as go-control-plane generates it, at a pinned version: what
// test/integration/gateway/ext-authz.test.ts checks Tollgate's answers with.
module tollgate.dev/harness/extauthz-client

go 1.26.0

require (
	github.com/envoyproxy/go-control-plane/envoy v1.40.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/cncf/xds/go v0.0.0-20260202195803-dba9d589def2 // indirect
	github.com/envoyproxy/protoc-gen-validate v1.3.3 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)
