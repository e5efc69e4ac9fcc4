/// <reference types="vitest/config" />
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { defineConfig, type Plugin } from "vite";
import react from "@vitejs/plugin-react";

const apiTarget = process.env.RAGCHAT_API ?? "http://127.0.0.1:8000";

/**
 * The OpenAPI docs page loads Redoc from this server, not a CDN: copy the pinned `redoc` package's standalone
 * bundle (and its license notes) to dist/vendor/. Fails the build when the package is missing (run `npm ci`).
 */
function vendorRedoc(): Plugin {
  return {
    name: "ragchat-vendor-redoc",
    apply: "build",
    generateBundle() {
      const require = createRequire(import.meta.url);
      const bundles = join(dirname(require.resolve("redoc/package.json")), "bundles");
      const files = { "redoc.standalone.js": true, "redoc.standalone.js.LICENSE.txt": false };
      for (const [name, required] of Object.entries(files)) {
        const path = join(bundles, name);
        if (!existsSync(path)) {
          if (required) this.error(`${path} is missing: run \`npm ci\` in client/`);
          continue;
        }
        this.emitFile({ type: "asset", fileName: `vendor/${name}`, source: readFileSync(path) });
      }
    },
  };
}

export default defineConfig({
  plugins: [react(), vendorRedoc()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
  },
  server: {
    port: 5173,
    proxy: {
      // SSE needs an unbuffered proxy: http-proxy streams by default.
      "/api": { target: apiTarget, changeOrigin: true },
    },
  },
  preview: {
    proxy: {
      "/api": { target: apiTarget, changeOrigin: true },
    },
  },
  test: {
    environment: "jsdom",
    globals: true,
    setupFiles: ["./src/test/setup.ts"],
    css: false,
    include: ["src/**/*.test.{ts,tsx}"],
    // a busy machine (CI beside other work) renders a page several times slower than an idle one: a test fails
    // on what it asserts, not on a 5 s default meant for idle laptops
    testTimeout: 30_000,
  },
});
