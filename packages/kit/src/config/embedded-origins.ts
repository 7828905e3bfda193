/**
 * The browser origins allowed in the embedded (development) mode, `CORS_ORIGINS`' default there:
 * any port on loopback, so a web app's dev server (Vite, webpack) works out of the box. Apart from
 * ./origins.ts so the launcher can pass it on without loading zod.
 */
export const EMBEDDED_CORS_ORIGINS = 'http://localhost:*,http://127.0.0.1:*';
