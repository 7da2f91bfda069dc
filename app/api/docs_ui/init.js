// Starts Swagger UI on /docs (an external file: the page's CSP allows no inline script).
"use strict";
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  layout: "BaseLayout",
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  // Swagger UI would otherwise send the schema to validator.swagger.io for a badge.
  validatorUrl: null,
  showExtensions: true,
});
