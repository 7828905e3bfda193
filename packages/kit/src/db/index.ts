/** PostgreSQL (a pool on its own schema, migrations, per-service roles) and Redis clients. */
export { type Db, openDb, type OpenDbOptions, type Queryable, SCHEMA_NAME } from './db';
export { lockDownSql, provisionServiceRoles, roleUrl, type ServiceRole, serviceRoleSql } from './db-roles';
export { migrate } from './migrate';
export { closeRedis, openRedis, type Redis, type RedisOptions, redisReady } from './redis';
