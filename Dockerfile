# The operator runs as JavaScript compiled from src/ (`npm run build`); no type stripping at run time.
# The base image provides Node 24, so the `node` devDependency stays out of the image. BASE_IMAGE is any
# Debian image with Node 24, npm and a uid-1000 user (the official image's `node`); the test suite builds
# on one made from Debian packages (test/env/image/base.sh). The build stages run on the builder's own
# platform (their output is JavaScript), so a multi-arch build emulates only the last stage.
ARG BASE_IMAGE=node:24-bookworm-slim

FROM --platform=$BUILDPLATFORM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No dependency needs an install script (TypeScript 7's compiler is a per-platform optional package;
# the `node` package's script would only download a second Node).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# The compiler's own entry, not `npm run build`: npm would put node_modules/.bin first on PATH, where
# `node` is the devDependency whose binary the skipped install script never fetched.
RUN node node_modules/typescript/lib/tsc.js -p tsconfig.build.json

FROM --platform=$BUILDPLATFORM ${BASE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${BASE_IMAGE}
# The system roots Go's crypto/x509 reads (src/net/roots.ts); the slim base image purges them.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
# dist/main.js reads its version from ../package.json.
COPY package.json ./
COPY --from=build /app/dist ./dist
# The image's `node` user, by number so the kubelet can verify runAsNonRoot.
USER 1000:1000
EXPOSE 8080 8081
# A small young generation (1 MiB semi-spaces): V8 does not shrink it while the operator idles after a burst (the
# initial lists) grew it (docs/configuration.md, BENCHMARKS.md benchmark 4); the extra scavenges cost little.
ENTRYPOINT ["node", "--max-semi-space-size=1", "--no-strip-types", "dist/main.js"]
