// Conditions on a table's rows, in the terms of its record: the one way the runtime and the handlers say which
// rows they want. A dialect compiles them to SQL (runtime/tables/sql-condition.ts); nothing is guessed from shapes.
// Typed by the record when the caller has one: `equal('digest', d)` given to a Table<ImageRecord> compiles only
// if images have a digest. A property inside a JSON property is named with a dot: 'claimMatch.issuer'.
import type { Row } from '../model/records.js';

type PropertyOf<T> = Extract<keyof T, string>;
/** A property of the record, or a path into one of its JSON properties. */
export type Property<T = Row> = PropertyOf<T> | `${PropertyOf<T>}.${string}`;

/** What a property is compared with: the stored form (an int64 is its decimal text). */
export type Value = string | number | boolean;

export interface Bound {
  value: Value;
  inclusive: boolean;
}

export type Condition<T = Row> =
  | { is: 'and'; terms: Condition<T>[] }
  | { is: 'or'; terms: Condition<T>[] }
  | { is: 'equal'; property: Property<T>; value: Value }
  | { is: 'in'; property: Property<T>; values: Value[] }
  | { is: 'range'; property: Property<T>; lower?: Bound; upper?: Bound }
  /** SQL's LIKE, its pattern escaped with a backslash (see contains) */
  | { is: 'like'; property: Property<T>; pattern: string }
  | { is: 'null'; property: Property<T> }
  | { is: 'notNull'; property: Property<T> };

export const and = <T = Row>(...terms: Condition<T>[]): Condition<T> => ({ is: 'and', terms });
export const or = <T = Row>(...terms: Condition<T>[]): Condition<T> => ({ is: 'or', terms });
/** Every row. */
export const everything = <T = Row>(): Condition<T> => and<T>();
export const isNull = <T = Row>(property: NoInfer<Property<T>>): Condition<T> => ({ is: 'null', property });
export const notNull = <T = Row>(property: NoInfer<Property<T>>): Condition<T> => ({ is: 'notNull', property });
/** The property has this value; null: it has none. */
export const equal = <T = Row>(property: NoInfer<Property<T>>, value: Value | null): Condition<T> =>
  value === null ? isNull(property) : { is: 'equal', property, value };
/** One of these values; none at all matches no row. */
export const oneOf = <T = Row>(property: NoInfer<Property<T>>, values: readonly Value[]): Condition<T> => ({
  is: 'in',
  property,
  values: [...values],
});

export interface RangeBounds {
  gt?: Value;
  gte?: Value;
  lt?: Value;
  lte?: Value;
}

export function range<T = Row>(property: NoInfer<Property<T>>, { gt, gte, lt, lte }: RangeBounds): Condition<T> {
  const bound = (strict: Value | undefined, loose: Value | undefined): Bound | undefined =>
    strict !== undefined
      ? { value: strict, inclusive: false }
      : loose !== undefined
        ? { value: loose, inclusive: true }
        : undefined;
  const lower = bound(gt, gte);
  const upper = bound(lt, lte);
  return { is: 'range', property, ...(lower && { lower }), ...(upper && { upper }) };
}

/** The text occurs in the property: % and _ in it match themselves, not any characters. */
export const contains = <T = Row>(property: NoInfer<Property<T>>, text: string): Condition<T> => ({
  is: 'like',
  property,
  pattern: `%${text.replace(/[\\%_]/g, '\\$&')}%`,
});

/** Each property has the value given (null: none), as a record with these fields would. */
export function matching<T = Row>(
  fields: NoInfer<{ [K in PropertyOf<T>]?: Extract<T[K], Value> | null }>,
): Condition<T> {
  return and<T>(
    ...Object.entries(fields as Record<string, Value | null>).map(([property, value]) =>
      equal<T>(property as PropertyOf<T>, value),
    ),
  );
}
