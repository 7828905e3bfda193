import type { Db, Queryable } from '@halo/kit/db';
import type { ListQuery, Order, Product, ProductFields, SortKey } from '../domain/model';

interface ProductRow {
  id: number;
  name: string;
  description: string;
  category: string;
  price_cents: number;
  created_at: Date;
  updated_at: Date;
}

/** numeric(12,2) × 100 is a whole number: read as bigint cents, never through a double. */
const COLS = 'id, name, description, category, (price * 100)::bigint AS price_cents, created_at, updated_at';

const toProduct = (r: ProductRow): Product => ({
  id: r.id,
  name: r.name,
  description: r.description,
  category: r.category,
  priceCents: r.price_cents,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

/**
 * ORDER BY comes only from these maps (identifiers cannot be parameters); values always travel
 * as parameters. The id tie-break runs in the same direction, so one index serves both orders.
 */
export const SORT_SQL: Record<SortKey, Record<Order, string>> = {
  id: { asc: 'id ASC', desc: 'id DESC' },
  name: { asc: 'name ASC, id ASC', desc: 'name DESC, id DESC' },
  price: { asc: 'price ASC, id ASC', desc: 'price DESC, id DESC' },
  created_at: { asc: 'created_at ASC, id ASC', desc: 'created_at DESC, id DESC' },
};

/** Every SQL statement of the catalog service. */
export class CatalogStore {
  constructor(private readonly db: Db) {}

  async page(q: ListQuery, offset: number): Promise<Product[]> {
    const orderBy = SORT_SQL[q.sort][q.order];
    const { rows } =
      q.category === null
        ? await this.db.query<ProductRow>(`SELECT ${COLS} FROM products ORDER BY ${orderBy} LIMIT $1 OFFSET $2`, [q.limit, offset])
        : await this.db.query<ProductRow>(`SELECT ${COLS} FROM products WHERE category = $3 ORDER BY ${orderBy} LIMIT $1 OFFSET $2`, [
            q.limit,
            offset,
            q.category,
          ]);
    return rows.map(toProduct);
  }

  async count(category: string | null): Promise<number> {
    const { rows } =
      category === null
        ? await this.db.query<{ n: number }>('SELECT count(*) AS n FROM products')
        : await this.db.query<{ n: number }>('SELECT count(*) AS n FROM products WHERE category = $1', [category]);
    return rows[0]!.n;
  }

  async afterId(limit: number, afterId: number | null, category: string | null): Promise<Product[]> {
    const { rows } =
      category === null
        ? await this.db.query<ProductRow>(`SELECT ${COLS} FROM products WHERE id > $2 ORDER BY id LIMIT $1`, [limit, afterId ?? 0])
        : await this.db.query<ProductRow>(`SELECT ${COLS} FROM products WHERE category = $3 AND id > $2 ORDER BY id LIMIT $1`, [
            limit,
            afterId ?? 0,
            category,
          ]);
    return rows.map(toProduct);
  }

  async byIds(ids: readonly number[]): Promise<Product[]> {
    const { rows } = await this.db.query<ProductRow>(`SELECT ${COLS} FROM products WHERE id = ANY($1::bigint[])`, [ids]);
    return rows.map(toProduct);
  }

  async insert(p: ProductFields & { createdAt?: string }, tx: Queryable = this.db): Promise<Product> {
    const { rows } = await tx.query<ProductRow>(
      `INSERT INTO products (name, description, category, price, created_at, updated_at)
       VALUES ($1, $2, $3, $4::bigint / 100.0, COALESCE($5::timestamptz, now()), COALESCE($5::timestamptz, now()))
       RETURNING ${COLS}`,
      [p.name, p.description, p.category, p.priceCents, p.createdAt ?? null],
    );
    return toProduct(rows[0]!);
  }

  /** Changes only the fields given (none of them can be NULL, so COALESCE means "keep"). */
  async update(id: number, c: Partial<ProductFields>): Promise<Product | null> {
    const { rows } = await this.db.query<ProductRow>(
      `UPDATE products SET
         name = COALESCE($2, name),
         description = COALESCE($3, description),
         category = COALESCE($4, category),
         price = COALESCE($5::bigint / 100.0, price),
         updated_at = now()
       WHERE id = $1
       RETURNING ${COLS}`,
      [id, c.name ?? null, c.description ?? null, c.category ?? null, c.priceCents ?? null],
    );
    return rows[0] ? toProduct(rows[0]) : null;
  }

  async delete(id: number): Promise<boolean> {
    const { rowCount } = await this.db.query('DELETE FROM products WHERE id = $1', [id]);
    return rowCount > 0;
  }
}
