#!/usr/bin/env bash
# Compiles the gRPC surface into proto/descriptors.pb, the FileDescriptorSet that server reflection
# serves: gateway.proto and cloudevents.proto, the well-known types they import, and the health and
# reflection services (their .proto files from the grpc-health-check and @grpc/reflection packages,
# under their canonical names grpc/health/v1/health.proto, grpc/reflection/v1{,alpha}/reflection.proto).
# Needs protoc (Debian: apt-get install protobuf-compiler). Run it (npm run proto:descriptors) after
# changing a .proto file and commit the result; test/bridges/grpc/descriptor-set.test.ts checks that
# the set matches the files.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 2; }
vendor=$(mktemp -d)
trap 'rm -rf "$vendor"' EXIT
mkdir -p "$vendor/grpc/health/v1" "$vendor/grpc/reflection/v1" "$vendor/grpc/reflection/v1alpha"
cp node_modules/grpc-health-check/proto/health/v1/health.proto "$vendor/grpc/health/v1/health.proto"
cp node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto "$vendor/grpc/reflection/v1/reflection.proto"
cp node_modules/@grpc/reflection/build/proto/grpc/reflection/v1alpha/reflection.proto "$vendor/grpc/reflection/v1alpha/reflection.proto"
includes=(-I proto -I "$vendor")
# The well-known types ship with protoc (Debian: /usr/include).
for dir in /usr/include /usr/local/include; do [ -f "$dir/google/protobuf/any.proto" ] && includes+=(-I "$dir") && break; done
protoc "${includes[@]}" --include_imports --descriptor_set_out=proto/descriptors.pb \
  gateway.proto cloudevents.proto grpc/health/v1/health.proto grpc/reflection/v1/reflection.proto grpc/reflection/v1alpha/reflection.proto
echo "wrote proto/descriptors.pb"
