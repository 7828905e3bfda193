import type { Db } from '@halo/kit/db';
import type { Logger } from '@halo/kit/logging';
import { CatalogStore } from './store';

/**
 * Demo products for the embedded dev mode only (docs/api/auth.md "Seeded demo data"): 42 products in
 * three categories, with fixed timestamps so that sorting by created_at is reproducible, and a
 * few equal prices so that the id tie-break shows.
 *
 * Idempotent by a seeded-set marker, not by a natural key: product names are not unique (nothing
 * in the contract makes them so), and a name-keyed seed would bring back a demo product an admin
 * deleted or renamed. The marker row and the products are written in one transaction, and the
 * marker's primary key makes a concurrent replica wait and then skip: a restart neither
 * duplicates nor loses rows. A new demo set gets a new marker name.
 */
export const DEMO_SET = 'demo-products-v1';

type Demo = [name: string, price: number, description: string];

const DEMO: Record<'books' | 'electronics' | 'games', Demo[]> = {
  books: [
    ['Bumi Manusia', 12.5, 'Pramoedya Ananta Toer, the first book of the Buru Quartet.'],
    ['Laskar Pelangi', 9.99, 'Andrea Hirata on ten children and their school on Belitung.'],
    ['Cantik Itu Luka', 14.25, 'Eka Kurniawan, a family saga across a century.'],
    ['Designing Data-Intensive Applications', 42, 'Martin Kleppmann on storage, replication and streams.'],
    ['The Pragmatic Programmer', 39.95, 'Twentieth anniversary edition.'],
    ['Refactoring', 44.99, 'Martin Fowler, second edition with JavaScript examples.'],
    ['Release It!', 34.95, 'Michael Nygard on designing software for production.'],
    ['Site Reliability Engineering', 29.99, 'How Google runs production systems.'],
    ['Database Internals', 49.99, 'Alex Petrov on how distributed databases work.'],
    ['Clean Architecture', 29.99, 'Robert C. Martin on structure and boundaries.'],
    ['Domain-Driven Design', 54.99, 'Eric Evans on tackling complexity in software.'],
    ['Learning GraphQL', 24.99, 'Declarative data fetching for modern web apps.'],
    ['Building Microservices', 44.99, 'Sam Newman, second edition.'],
    ['Gadis Kretek', 11.75, 'Ratih Kumala on a kretek dynasty in Java.'],
  ],
  electronics: [
    ['Mechanical Keyboard', 89, 'Hot-swappable switches, 75% layout.'],
    ['Wireless Mouse', 24.99, 'Silent clicks, USB-C charging.'],
    ['USB-C Hub', 34.5, 'HDMI, two USB-A ports, SD card reader.'],
    ['Noise-Cancelling Headphones', 199.99, 'Thirty hours of battery.'],
    ['27-inch Monitor', 249, 'QHD, IPS, 75 Hz.'],
    ['Webcam', 59.9, '1080p with a privacy shutter.'],
    ['Portable SSD 1 TB', 99.99, 'USB 3.2, 1050 MB/s.'],
    ['Power Bank 20000 mAh', 39.99, 'Two-way 22.5 W fast charging.'],
    ['Smart Plug', 12.99, 'Energy monitoring, works offline.'],
    ['Bluetooth Speaker', 49.99, 'Waterproof, twelve hours of play.'],
    ['E-Reader', 139, 'Glare-free 6-inch display.'],
    ['Fitness Tracker', 59.9, 'Heart rate and sleep tracking.'],
    ['Laptop Stand', 29.99, 'Aluminium, adjustable height.'],
    ['HDMI Cable 2 m', 7.5, 'Supports 4K at 60 Hz.'],
  ],
  games: [
    ['Chess Set', 19.99, 'Weighted pieces, folding wooden board.'],
    ['Catan', 44, 'Trade, build and settle.'],
    ['Ticket to Ride', 49.99, 'Cross-country train adventure.'],
    ['Carcassonne', 34.99, 'Tile-laying in medieval France.'],
    ['Pandemic', 39.99, 'Cooperative game against four diseases.'],
    ['Azul', 39.99, 'Draft tiles to decorate a palace wall.'],
    ['Dixit', 32.5, 'Storytelling with dreamlike cards.'],
    ['Codenames', 19.99, 'Word-guessing for two teams.'],
    ['Congklak', 15, 'Traditional Indonesian mancala board.'],
    ['Jigsaw Puzzle 1000', 16.99, 'Borobudur at sunrise.'],
    ['Sudoku Book', 6.99, 'Two hundred puzzles, easy to fiendish.'],
    ['Mahjong Set', 59, 'One hundred and forty-four tiles with a case.'],
    ['Playing Cards', 4.5, 'Plastic-coated, two decks.'],
    ['Wingspan', 59.99, 'Attract birds to your wildlife preserves.'],
  ],
};

/** How many products the demo set holds (tests compare against it). */
export const DEMO_COUNT = Object.values(DEMO).reduce((n, list) => n + list.length, 0);

export async function seedDemoData(db: Db, logger: Logger): Promise<void> {
  const store = new CatalogStore(db);
  const seeded = await db.transaction(async (tx) => {
    const { rowCount } = await tx.query('INSERT INTO demo_seeds (name) VALUES ($1) ON CONFLICT (name) DO NOTHING', [DEMO_SET]);
    if (rowCount === 0) return 0;
    const base = Date.parse('2026-01-05T08:00:00.000Z');
    let n = 0;
    // Interleave the categories, so that id order, time order and category are not the same thing.
    const longest = Math.max(...Object.values(DEMO).map((list) => list.length));
    for (let i = 0; i < longest; i++) {
      for (const [category, list] of Object.entries(DEMO)) {
        const item = list[i];
        if (!item) continue;
        const [name, price, description] = item;
        const createdAt = new Date(base + n++ * 3_600_000).toISOString();
        await store.insert({ name, description, category, priceCents: Math.round(price * 100), createdAt }, tx);
      }
    }
    return n;
  });
  logger.info({ seededProducts: seeded }, seeded ? 'demo products seeded' : 'demo products already present');
}
