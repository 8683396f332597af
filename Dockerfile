# The Tollgate image: one image runs the gateway (`tollgate gateway`), the operator
# (`tollgate operator`) and the model puller (`tollgate pull`, a container of every model's pods).
# Used by helm/tollgate (image.repository / image.tag).
#   docker build -t tollgate/tollgate:0.1.0 .      (or: buildah bud -t tollgate/tollgate:0.1.0 .)
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Exactly the lock (the Makefile does the same).
RUN npm ci --no-audit --no-fund --loglevel=error
COPY tsconfig.json tsconfig.build.json ./
COPY cli cli
COPY common common
COPY gateway gateway
COPY operator operator
COPY panel/static panel/static
COPY tools/bundle tools/bundle
# The steps of `make build` (the panel's files beside the compiled gateway that serves them).
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json \
 && mkdir -p dist/panel && cp -r panel/static dist/panel/static \
 && cp gateway/grpc/open-inference.proto dist/gateway/grpc/ \
 && node tools/bundle/sidecar.mjs \
 && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/dist dist
COPY bin bin
# The chart runs every container as this user, with a read-only root filesystem.
USER 10001:10001
ENTRYPOINT ["node", "/app/bin/tollgate.js"]
