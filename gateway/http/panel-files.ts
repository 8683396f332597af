import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import express from 'express';
import type { Router } from 'express';

/**
 * The management panel: static HTML, CSS and ES modules with no build step. It calls the
 * management API at `../api/v1/` relative to where it is mounted, so mount it at `/panel` beside
 * the API at `/api/v1`.
 */
export const panelStaticDir = fileURLToPath(new URL('../../panel/static/', import.meta.url));

/**
 * "Sign in" with the organisation's provider: the panel runs the authorization code flow with PKCE
 * itself, as a public client (see docs/panel.md, "Signing in to the panel"). Absent: the paste-a-token
 * box only (standalone mode, scripts).
 */
export interface PanelSignIn {
  issuer: string;
  clientId: string;
  scopes: string;
  /** Where the provider sends the browser back; the panel's own address when absent. */
  redirectPath?: string | undefined;
}

// oauth4webapi (panva) does the protocol in the browser: one ES module with no imports, served as is.
const OAUTH_MODULE = createRequire(import.meta.url).resolve('oauth4webapi');

// The panel holds a bearer token: it loads nothing from elsewhere, cannot be framed, and leaks no
// referrer. Inline scripts and styles are refused, so injected markup cannot run. It talks to the
// identity provider (discovery, token endpoint) and nothing else.
function securityHeaders(signIn: PanelSignIn | undefined): Record<string, string> {
  const provider = signIn === undefined ? '' : ` ${new URL(signIn.issuer).origin}`;
  return {
    'Content-Security-Policy':
      `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'${provider}; ` +
      "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin',
  };
}

export function createPanelRouter(signIn: PanelSignIn | undefined, opts: { tokenLinks: boolean }): Router {
  const router = express.Router({ strict: true });
  const headers = securityHeaders(signIn);
  const config = JSON.stringify({ signIn: signIn ?? null, tokenLinks: opts.tokenLinks });
  router.use((req, res, next) => {
    res.set(headers);
    // `/panel` without the slash would resolve the page's relative URLs against `/`.
    if (req.path === '/' && !req.originalUrl.split('?')[0]?.endsWith('/')) {
      res.redirect(301, `${req.baseUrl}/`);
      return;
    }
    next();
  });
  router.get('/config.json', (_req, res) => {
    res.set('Cache-Control', 'no-cache').type('application/json').send(config);
  });
  router.get('/vendor/oauth4webapi.js', (_req, res) => {
    res
      .set('Cache-Control', 'no-cache')
      .sendFile(OAUTH_MODULE, { headers: { 'Content-Type': 'text/javascript' } });
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
