import { fileURLToPath } from 'node:url';
import express from 'express';
import type { Router } from 'express';

/**
 * The management panel: static HTML, CSS and ES modules with no build step. It calls the
 * management API at `../api/v1/` relative to where it is mounted, so mount it at `/panel` beside
 * the API at `/api/v1`.
 */
export const panelStaticDir = fileURLToPath(new URL('./static/', import.meta.url));

// The panel holds a bearer token: it loads nothing from elsewhere, cannot be framed, and leaks no
// referrer. Inline scripts and styles are refused, so injected markup cannot run.
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

export function createPanelRouter(): Router {
  const router = express.Router({ strict: true });
  router.use((req, res, next) => {
    res.set(SECURITY_HEADERS);
    // `/panel` without the slash would resolve the page's relative URLs against `/`.
    if (req.path === '/' && !req.originalUrl.split('?')[0]?.endsWith('/')) {
      res.redirect(301, `${req.baseUrl}/`);
      return;
    }
    next();
  });
  router.use(
    express.static(panelStaticDir, {
      index: 'index.html',
      redirect: false,
      fallthrough: true,
      // Small files served on loopback or behind an ingress; revalidating keeps a rollout visible.
      setHeaders: (res) => res.setHeader('Cache-Control', 'no-cache'),
    }),
  );
  return router;
}
