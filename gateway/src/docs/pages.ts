/** The pages and small scripts the documents serve: HTML of our own, every script and style from the gateway. */

export const DOCS_PATH = '/docs';
export const OPENAPI_PATH = '/openapi.json';
export const DOCS_ASSETS = '/docs/assets/';
export const GRAPHIQL_ASSETS = '/graphiql/assets/';

/**
 * Pages: the HTML is ours, every script and style comes from the gateway itself. The policy
 * says so to the browser too; inline styles are what both UIs set at run time, and GraphiQL's
 * editor runs its language services in workers from the same origin.
 */
export const PAGE_POLICY =
  "default-src 'self'; img-src 'self' data:; font-src 'self' data:; style-src 'self' 'unsafe-inline'; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export const swaggerPage = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Halo API reference</title>
    <link rel="stylesheet" href="${DOCS_ASSETS}swagger-ui.css" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${DOCS_ASSETS}swagger-ui-bundle.js"></script>
    <script src="${DOCS_ASSETS}docs.js"></script>
  </body>
</html>
`;

// validatorUrl: null keeps Swagger UI from sending the document to its public validator.
export const swaggerInit = `window.ui = SwaggerUIBundle({
  url: ${JSON.stringify(OPENAPI_PATH)},
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  displayOperationId: true,
});
`;

/**
 * In the example query, where the page's own origin goes: graphiql.js puts the browser's
 * `location.origin` there, so the example names the address the page was opened at (any port
 * offset, any host name) without the gateway ever echoing a client's Host header into a page.
 */
export const GRAPHIQL_ORIGIN = '{{origin}}';

/**
 * What GraphiQL opens with: a query that works without signing in, and above it how to sign in
 * for the rest: a token from `POST /auth/login` in the headers editor. The headers editor itself
 * starts empty, since a placeholder token there would make every query fail with 401.
 */
export const GRAPHIQL_QUERY = `# Halo's GraphQL API (GraphiQL is served in development only).
#
# This query needs no sign-in. Fields marked @authenticated (me, orders, messages,
# sendMessage, ...) need an access token. Get one with POST /auth/login, e.g.
#
#   curl -s -X POST ${GRAPHIQL_ORIGIN}/auth/login -H 'content-type: application/json' \\
#     -d '{"email":"alice@halo.local","password":"password123"}'
#
# and put its "accessToken" in the Headers tab below:
#
#   { "Authorization": "Bearer <accessToken>" }
#
# An API key works too: { "X-API-Key": "halo_..." }.
{
  posts(first: 5) {
    edges {
      node {
        id
        title
        # Sent in a second part, once the titles are out (@defer: docs/api/graphql.md)
        ... @defer {
          author {
            name
          }
        }
      }
    }
  }
}
`;

/**
 * GraphiQL's options, in the page as a JSON data block (not run, so the policy allows it) that
 * graphiql.js reads. Yoga's GraphiQL opens on `query` (a `?query=` in the address wins, which is
 * how an edited query survives a reload); without it, it opens on its generic welcome comment,
 * which has nothing to run, whatever GraphiQL's own `defaultQuery` says.
 */
export const GRAPHIQL_OPTIONS = {
  endpoint: '/graphql',
  title: 'Halo GraphiQL',
  // Subscriptions over graphql-ws (graphql-transport-ws), as the gateway speaks them.
  subscriptionsProtocol: 'WS',
  query: GRAPHIQL_QUERY,
};

export const graphiqlPage = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Halo GraphiQL</title>
    <link rel="stylesheet" href="${GRAPHIQL_ASSETS}graphiql.css" />
    <style>html, body, #graphiql { height: 100%; margin: 0; }</style>
  </head>
  <body>
    <div id="graphiql"></div>
    <script id="graphiql-options" type="application/json">${JSON.stringify(GRAPHIQL_OPTIONS).replaceAll('<', '\\u003c')}</script>
    <script src="${GRAPHIQL_ASSETS}environment.js"></script>
    <script src="${GRAPHIQL_ASSETS}yoga-graphiql.umd.js"></script>
    <script src="${GRAPHIQL_ASSETS}graphiql.js"></script>
  </body>
</html>
`;

/** The editor's language services run in workers, loaded from here rather than from blobs of inlined code. */
export const graphiqlEnvironment = `self.MonacoEnvironment = {
  globalAPI: false,
  getWorkerUrl: function (_moduleId, label) {
    var workers = {
      editorWorkerService: 'editor.worker.bundle.js',
      json: 'json.worker.bundle.js',
      graphql: 'graphql.worker..bundle.js',
    };
    return ${JSON.stringify(`${GRAPHIQL_ASSETS}monacoeditorwork/`)} + (workers[label] || workers.editorWorkerService);
  },
};
`;

export const graphiqlInit = `var options = JSON.parse(document.getElementById('graphiql-options').textContent);
options.query = options.query.split(${JSON.stringify(GRAPHIQL_ORIGIN)}).join(location.origin);
YogaGraphiQL.renderYogaGraphiQL(document.getElementById('graphiql'), options);
`;

export const indexPage = (links: [string, string, string][]) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Halo API</title>
    <style>body { font: 16px/1.5 system-ui, sans-serif; margin: 3rem auto; max-width: 40rem; padding: 0 1rem; }</style>
  </head>
  <body>
    <h1>Halo API</h1>
    <ul>
${links.map(([href, name, what]) => `      <li><a href="${href}">${name}</a>: ${what}</li>`).join('\n')}
    </ul>
  </body>
</html>
`;
