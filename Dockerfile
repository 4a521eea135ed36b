# NODE_IMAGE lets air-gapped builds use a mirrored or locally built Node.js image.
ARG NODE_IMAGE=node:24-bookworm-slim

# Build stage: compile TypeScript and native modules, then drop dev dependencies.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# Scripts are skipped here (`prepare` would build before the sources are copied); the one native
# module is built explicitly.
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY routes ./routes
COPY openapi ./openapi
RUN npm run build && npm prune --omit=dev \
  && rm -rf node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
    node_modules/better-sqlite3/build/Release/obj node_modules/better-sqlite3/build/Release/obj.target \
    node_modules/better-sqlite3/build/Release/.deps node_modules/better-sqlite3/build/Release/*.a
# The service reads its Python helpers (the sandbox file helper) from their source paths at run
# time and sends them into the sandbox; collect every one, wherever it lives under src/, so the
# runtime stage does not depend on today's layout.
RUN mkdir -p /app/runtime-files \
  && find src -type f -name '*.py' -exec cp --parents {} /app/runtime-files/ \;

# Runtime stage: compiled code and production dependencies only, running as the unprivileged
# `node` user with its data in a volume.
#
# Sandboxes: this image is made for MORDN_SANDBOX_BACKEND=docker (as in docker-compose.yml). That
# backend speaks the Docker Engine HTTP API to MORDN_DOCKER_HOST and runs the file helper inside
# the sandbox container with that image's Python, so this image needs neither a docker CLI nor
# python3. It deliberately ships without bubblewrap: the bwrap backend needs unprivileged user
# namespaces, which Docker's default seccomp profile refuses inside a container, and loosening
# that confinement for the service is the wrong trade. With MORDN_SANDBOX_BACKEND=bwrap this
# image reports sandboxes as unavailable (/v1/sandbox/status, /readyz); run the bwrap backend
# from `npm start` on a host.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    MORDN_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/openapi ./openapi
COPY --from=build /app/runtime-files/ ./
RUN mkdir -p -m 0700 /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["serve"]
