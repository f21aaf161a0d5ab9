// v1's vulnerability reports, which v2 does not have: three calls declared in spec/registry.yaml as v1 endpoints.
// The reports are imported records (vulnReports, children of a repo); these calls answer in the reference's shapes:
//   GET /registry/v1/repos/{repo}/digests/{digest}/vulnreport  the latest report of one image (tenant.VulnReport)
//   GET /registry/v1/vuln_reports?repoId|digest&tag&scanner.*&createdSince            {items: [registry.VulnReport]}
//   GET /registry/v1/vuln_reports/counts?repo&tag&from&to                         {items: [VulnCountReport]}
// Reading one image's report takes vuln_reports.list (pull roles hold it); the lists take vuln_report.list.
import type {
  CountVulnReportsResponse,
  GetVulnReportResponse,
  ListVulnReportsResponse,
  RegistryHandlers,
} from '../generated/routes.js';
import { invalidArgument, notFound, type FieldViolation } from '../runtime/model/errors.js';
import { parseListRequest } from '../runtime/lists/list-request.js';
import type { HandlerContext } from '../runtime/pipeline/operations.js';
import { canonicalTimestamp, type Row } from '../runtime/model/records.js';
import { equal, oneOf, range, type Condition } from '../runtime/tables/condition.js';
import { parentOf } from '../runtime/model/uid.js';

const severities = ['CRITICAL', 'HIGH', 'MEDIUM', 'LOW', 'NEGLIGIBLE', 'UNKNOWN'] as const;
const countField: Record<(typeof severities)[number], string> = {
  CRITICAL: 'critCveIds',
  HIGH: 'highCveIds',
  MEDIUM: 'medCveIds',
  LOW: 'lowCveIds',
  NEGLIGIBLE: 'negligibleCveIds',
  UNKNOWN: 'unknownCveIds',
};

/** v1's timestamps: any form Date.parse takes, in the canonical form; an empty parameter is absent. */
function readTimestamps<T extends Record<string, string | undefined>>(query: T, timestamps: (keyof T & string)[]): T {
  const problems: FieldViolation[] = [];
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === '') continue;
    if (!timestamps.includes(name)) out[name] = value;
    else if (Number.isNaN(Date.parse(value)))
      problems.push({ field: name, description: 'must be an RFC 3339 timestamp' });
    else out[name] = canonicalTimestamp(value);
  }
  if (problems.length > 0) throw invalidArgument(problems);
  return out as T;
}

interface Vulnerability {
  id: string;
  aliases?: string[];
  severity?: string;
  description?: string;
  fix?: Row;
  package?: Row;
  locations?: string[];
}

const vulnerabilitiesOf = (report: Row) => (report.vulnerabilities ?? []) as Vulnerability[];

/** The reference's single-report shape. */
function tenantReport(report: Row): Row {
  const scanner = (report.scanner ?? {}) as Row;
  return {
    id: report.uid,
    lastSeen: report.updateTime,
    reportGeneration: report.createTime,
    scanner: { name: scanner.name ?? 'UNKNOWN', version: scanner.version ?? '' },
    ...(scanner.dbBuildTime ? { vulnerabilityDbLastBuildTime: scanner.dbBuildTime } : {}),
    vulnerabilityMatches: vulnerabilitiesOf(report).map((v) => ({
      // The tenant severity scale has no NEGLIGIBLE.
      vulnerability: {
        id: v.id,
        displayId: v.id,
        severity: v.severity === 'NEGLIGIBLE' ? 'LOW' : (v.severity ?? 'UNKNOWN'),
        description: v.description ?? '',
      },
      pkg: { name: v.package?.name ?? '', version: v.package?.version ?? '', purl: v.package?.purl ?? '' },
      fix: { state: v.fix?.state ?? 'UNKNOWN', versions: v.fix?.versions ?? [] },
    })),
  };
}

/** The reference's list-item shape. */
function registryReport(report: Row): Row {
  return {
    createdAt: report.createTime,
    digest: report.digest,
    scanner: report.scanner ?? {},
    vulnerabilities: vulnerabilitiesOf(report).map((v) => ({
      id: v.id,
      aliases: v.aliases ?? [],
      severity: v.severity ?? 'UNKNOWN',
      description: v.description ?? '',
      fix: { state: v.fix?.state ?? 'UNKNOWN', versions: v.fix?.versions ?? [] },
      purls: v.package?.purl ? [v.package.purl] : [],
      locations: v.locations ?? [],
    })),
  };
}

/** Per report: the distinct CVE ids by severity, and how many of each. */
function countReport(report: Row, repoName: string): Row {
  const bySeverity = new Map<string, Set<string>>(severities.map((s) => [s, new Set()]));
  for (const v of vulnerabilitiesOf(report)) bySeverity.get(v.severity ?? 'UNKNOWN')?.add(v.id);
  const sorted = (s: Set<string>) => [...s].sort();
  return {
    repo: repoName,
    tag: report.tag ?? '',
    date: report.createTime,
    sizeBytes: report.sizeBytes === undefined ? '0' : String(report.sizeBytes),
    cveIds: sorted(new Set(vulnerabilitiesOf(report).map((v) => v.id))),
    ...Object.fromEntries(severities.map((s) => [countField[s], sorted(bySeverity.get(s)!)])),
    vulnCounts: severities
      .filter((s) => bySeverity.get(s)!.size > 0)
      .map((s) => ({ severity: s, count: bySeverity.get(s)!.size })),
  };
}

/** Every report matching, newest first, of those the caller may see. */
async function allReports({ model, resources, visible }: HandlerContext, query: Row, scope: Condition[]) {
  const req = parseListRequest({ ...query, order_by: 'created_at desc' }, model.resources.vulnReports);
  return resources.readsOf('vulnReports').listAll(req, [...visible, ...scope]);
}

export const vulnReports: Pick<RegistryHandlers, 'getVulnReport' | 'listVulnReports' | 'countVulnReports'> = {
  /** The capability is checked at the repo (the endpoint's scope parameter) by the pipeline. */
  async getVulnReport({ uid: repo, digest }, { model, resources }) {
    const reports = model.resources.vulnReports;
    const req = parseListRequest({ digest, order_by: 'created_at desc', page_size: 1 }, reports);
    const [latest] = (await resources.readsOf('vulnReports').list(req, [equal('parentUid', repo)])).items;
    if (!latest) throw notFound(reports.type, `${repo} ${digest}`);
    return tenantReport(latest) as GetVulnReportResponse;
  },

  async listVulnReports(request, context) {
    const q = readTimestamps(request, ['scanner.dbBuildTime', 'createdSince']);
    if (!q.repoId && !q.digest) throw invalidArgument([{ field: 'repoId', description: 'give repoId or digest' }]);
    const scanner = (['name', 'version', 'dbBuildTime'] as const)
      .filter((k) => q[`scanner.${k}`])
      .map((k) => equal(`scanner.${k}`, q[`scanner.${k}`]!));
    const scope: Condition[] = [
      // A digest names one image wherever it is; it takes precedence over the repo, and the tag is then ignored.
      ...(q.digest ? [] : [equal('parentUid', q.repoId ?? null)]),
      ...scanner,
    ];
    const query = q.digest
      ? { digest: q.digest, createdSince: q.createdSince }
      : { tag: q.tag, createdSince: q.createdSince };
    return { items: (await allReports(context, query, scope)).map(registryReport) } as ListVulnReportsResponse;
  },

  async countVulnReports(request, context) {
    const q = readTimestamps(request, ['from', 'to']);
    const repos = context.resources.tableOf('repos');
    const named = q.repo ? await repos.find(equal('name', q.repo), [{ property: 'uid', desc: false }], -1) : undefined;
    if (named?.length === 0) return { items: [] };
    const scope: Condition[] = [
      ...(named
        ? [
            oneOf(
              'parentUid',
              named.map((r) => r.uid),
            ),
          ]
        : []),
      ...(q.to ? [range('createTime', { lte: q.to })] : []),
    ];
    const found = await allReports(context, { tag: q.tag, createdSince: q.from }, scope);
    const parents = [...new Set(found.map((r) => parentOf(r.uid)!))];
    const names = new Map(
      (named ?? (await repos.find(oneOf('uid', parents), [{ property: 'uid', desc: false }], -1))).map((r) => [
        r.uid,
        r.name,
      ]),
    );
    return {
      items: found.map((r) => countReport(r, names.get(parentOf(r.uid)!) ?? '')),
    } as CountVulnReportsResponse;
  },
};
