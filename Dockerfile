# The Platform API as a container: the release that `npm run build` makes (see docs/operating.md), on Node 20.
# Build: docker build -t platform-api .   Run: docker run -p 8080:8080 -v platform-data:/data platform-api
# A first token (for the owner made on first start), with plain node in the image:
#   docker run --rm -v platform-data:/data platform-api node server/token.js   (on PostgreSQL: -e DATABASE_URL=...)
# test/release-build.test.ts builds the same release and starts it with this file's ENV, WORKDIR and CMD.

# The build stage: the production dependencies (with the generator and esbuild, which npm start needs too; no
# linter, test runner or type checker), the generated parts, the release.
FROM node:20-slim AS build
# better-sqlite3 compiles from source: node-gyp needs Python, make and a C++ compiler.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
RUN npm run build

# The image: the release folder alone (plain JavaScript, production dependencies, generated parts) on the same
# Node, as the unprivileged `node` user, its data in the /data volume.
FROM node:20-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 DATA_DIR=/data LOG=on
WORKDIR /app
COPY --from=build /src/dist/release ./
RUN mkdir -m 700 /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
# /healthz: the process answers (no curl in the slim image: Node's fetch).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# On SIGTERM the server drains (DRAIN_SECONDS, default 5) and finishes what is in flight (SHUTDOWN_GRACE, 10):
# stop it with more than docker's default 10 s (docker stop -t 20; compose.yaml's stop_grace_period).
CMD ["node", "--enable-source-maps", "server/main.js"]
