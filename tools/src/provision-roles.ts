import { provisionServiceRoles, type ServiceRole } from '@halo/kit/launch';

/**
 * `node tools/dist/provision-roles.js`: gives every service its own login role and schema on an
 * external PostgreSQL (docs/database.md), the same statements the embedded launcher runs. The Helm
 * chart runs it as an optional pre-install/pre-upgrade hook (helm/halo, `provisionRoles`), before
 * the migration jobs. Idempotent: running it again only resets the passwords to the given ones.
 *
 *   ADMIN_DATABASE_URL   a superuser (or CREATEROLE + CREATEDB) URL of the server, any database
 *   HALO_DATABASE        the database Halo uses (created if missing), default `halo`
 *   HALO_SERVICES        comma list of the services, e.g. `auth,content,catalog`
 *   <SERVICE>_DB_PASSWORD  each service's password, e.g. `CONTENT_DB_PASSWORD`
 */
export interface ProvisionPlan {
  adminUrl: string;
  database: string;
  roles: ServiceRole[];
}

type Env = Record<string, string | undefined>;

export const passwordVar = (service: string) => `${service.toUpperCase()}_DB_PASSWORD`;

/** Reads the plan from the environment; a missing or bad variable throws one line naming it. */
export function provisionPlan(env: Env): ProvisionPlan {
  const adminUrl = env.ADMIN_DATABASE_URL;
  if (!adminUrl) throw new Error('ADMIN_DATABASE_URL is required');
  try {
    new URL(adminUrl);
  } catch {
    throw new Error('ADMIN_DATABASE_URL must be a postgres:// URL');
  }
  const services = (env.HALO_SERVICES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (services.length === 0) throw new Error('HALO_SERVICES is required (e.g. auth,content,catalog)');
  const roles = services.map((name) => {
    const password = env[passwordVar(name)];
    if (!password) throw new Error(`${passwordVar(name)} is required`);
    return { name, password };
  });
  return { adminUrl, database: env.HALO_DATABASE || 'halo', roles };
}

export async function provisionFromEnv(env: Env, log: (line: string) => void = () => undefined): Promise<ProvisionPlan> {
  const plan = provisionPlan(env);
  await provisionServiceRoles(plan.adminUrl, plan.database, plan.roles);
  // Names only: never the URL (it holds the admin password) nor the roles' passwords.
  for (const role of plan.roles) log(`role ${role.name}: owns schema ${role.name} in database ${plan.database}`);
  return plan;
}

if (require.main === module) {
  provisionFromEnv(process.env, (line) => process.stdout.write(`${line}\n`)).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`provision-roles: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
