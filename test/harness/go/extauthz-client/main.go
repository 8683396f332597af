// Reads one CheckRequest (protojson) on stdin, asks Authorization/Check at the address in its
// first argument, and prints the CheckResponse (protojson), or {"grpcCode":..., "message":...}
// when the call itself fails. Exit 2 on bad input.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: extauthz-client <host:port> < check-request.json")
		os.Exit(2)
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var req authv3.CheckRequest
	if err := protojson.Unmarshal(in, &req); err != nil {
		fmt.Fprintln(os.Stderr, "not a CheckRequest:", err)
		os.Exit(2)
	}
	conn, err := grpc.NewClient(os.Args[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := authv3.NewAuthorizationClient(conn).Check(ctx, &req)
	if err != nil {
		st, _ := status.FromError(err)
		out, _ := json.Marshal(map[string]any{"grpcCode": int(st.Code()), "message": st.Message()})
		os.Stdout.Write(out)
		return
	}
	out, err := protojson.Marshal(res)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
