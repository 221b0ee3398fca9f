# The operator runs its TypeScript sources directly on Node.js 24 (type stripping): no build step.
# The base image provides Node 24, so the `node` devDependency (and every other one) stays out.

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# No runtime dependency needs an install script.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY src ./src
# The image's `node` user, by number so the kubelet can verify runAsNonRoot.
USER 1000:1000
EXPOSE 8080 8081
# A small young generation (4 MiB semi-spaces) keeps the resident set small with tens of thousands of cached pods
# (BENCHMARKS.md, benchmark 4); the extra scavenges cost little for an operator's allocation rate.
ENTRYPOINT ["node", "--max-semi-space-size=4", "src/main.ts"]
