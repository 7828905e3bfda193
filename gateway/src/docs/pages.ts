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

// Subscriptions over graphql-ws (graphql-transport-ws), as the gateway speaks them.
export const graphiqlInit = `YogaGraphiQL.renderYogaGraphiQL(document.getElementById('graphiql'), {
  endpoint: '/graphql',
  title: 'Halo GraphiQL',
  subscriptionsProtocol: 'WS',
});
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
