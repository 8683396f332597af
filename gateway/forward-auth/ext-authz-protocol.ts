import { loadPackageDefinition, type ServiceDefinition } from '@grpc/grpc-js';
import { fromJSON } from '@grpc/proto-loader';
import protobuf from 'protobufjs';

/**
 * The part of Envoy's external authorization API (envoy.service.auth.v3, published in Envoy's
 * api/ tree, Apache-2.0) that Tollgate reads and answers: the service, method and field numbers
 * of the published proto, fewer fields (one left out is skipped on the wire, as protobuf
 * intends), every message in one package (names never reach the wire) and enums as int32 (the
 * same varint). test/integration/gateway/ext-authz.test.ts calls it with a client generated from
 * the published proto itself.
 */
const PROTO = `
syntax = "proto3";
package envoy.service.auth.v3;

service Authorization {
  rpc Check(CheckRequest) returns (CheckResponse);
}

message CheckRequest { AttributeContext attributes = 1; }

message AttributeContext {
  message Peer { Address address = 1; }
  message Request { HttpRequest http = 2; }
  message HttpRequest {
    string id = 1;
    string method = 2;
    map<string, string> headers = 3;
    string path = 4;
    string host = 5;
    string scheme = 6;
    HeaderMap header_map = 13;
  }
  Peer source = 1;
  Request request = 4;
}

// envoy.config.core.v3
message Address { SocketAddress socket_address = 1; }
message SocketAddress { string address = 2; uint32 port_value = 3; }
message HeaderMap { repeated HeaderValue headers = 1; }
message HeaderValue { string key = 1; string value = 2; bytes raw_value = 3; }
// append_action: envoy.config.core.v3.HeaderValueOption.HeaderAppendAction
message HeaderValueOption { HeaderValue header = 1; int32 append_action = 3; }

message CheckResponse {
  RpcStatus status = 1;
  oneof http_response {
    DeniedHttpResponse denied_response = 2;
    OkHttpResponse ok_response = 3;
  }
}
// google.rpc.Status
message RpcStatus { int32 code = 1; string message = 2; }
// code: envoy.type.v3.StatusCode, whose values are the HTTP statuses
message HttpStatus { int32 code = 1; }
message DeniedHttpResponse { HttpStatus status = 1; repeated HeaderValueOption headers = 2; string body = 3; }
message OkHttpResponse { repeated HeaderValueOption headers = 2; repeated string headers_to_remove = 5; }
`;

export interface HeaderValue {
  key: string;
  value: string;
  raw_value: Buffer;
}

export interface CheckRequest {
  attributes: {
    source: { address: { socket_address: { address: string; port_value: number } | null } | null } | null;
    request: {
      http: {
        id: string;
        method: string;
        headers: Record<string, string>;
        path: string;
        host: string;
        scheme: string;
        header_map: { headers: HeaderValue[] } | null;
      } | null;
    } | null;
  } | null;
}

export interface HeaderValueOption {
  header: { key: string; value: string };
  append_action: number;
}

export type CheckResponse =
  | {
      status: { code: number; message: string };
      ok_response: { headers: HeaderValueOption[]; headers_to_remove: string[] };
    }
  | {
      status: { code: number; message: string };
      denied_response: { status: { code: number }; headers: HeaderValueOption[]; body: string };
    };

/** HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD: the grant replaces whatever the client sent. */
export const OVERWRITE_IF_EXISTS_OR_ADD = 2;

let service: ServiceDefinition | undefined;

/** `envoy.service.auth.v3.Authorization`, parsed once per process. */
export function authorizationService(): ServiceDefinition {
  if (service !== undefined) return service;
  const root = protobuf.parse(PROTO, { keepCase: true }).root;
  const definition = fromJSON(root.toJSON(), { keepCase: true, longs: Number, defaults: true, oneofs: true });
  const pkg = loadPackageDefinition(definition) as unknown as {
    envoy: { service: { auth: { v3: { Authorization: { service: ServiceDefinition } } } } };
  };
  service = pkg.envoy.service.auth.v3.Authorization.service;
  return service;
}
