import { generateServiceKey } from '@halo/kit/launch';

/**
 * `npm run service-key -- <service> [id]`: a new Ed25519 key for one service (docs/service-identity.md).
 * Prints the private JWK (the service's SERVICE_SIGNING_KEY: put it in its Secret) and the public
 * JWK (add it to the `keys` of SERVICE_TRUSTED_KEYS of every service this one calls).
 */
function main(): void {
  const [service, id] = process.argv.slice(2);
  if (!service || !/^[a-z][a-z0-9_-]*$/.test(service)) {
    process.stderr.write('usage: npm run service-key -- <service> [key-id]\n');
    process.exit(2);
  }
  const { privateJwk, publicJwk } = generateServiceKey(service, id);
  process.stdout.write(
    [
      `# ${service}: SERVICE_SIGNING_KEY (secret; only ${service} gets it)`,
      JSON.stringify(privateJwk),
      '',
      `# public key ${publicJwk.kid}: add to SERVICE_TRUSTED_KEYS {"keys":[…]} of the services ${service} calls`,
      JSON.stringify(publicJwk),
      '',
    ].join('\n'),
  );
}

main();
