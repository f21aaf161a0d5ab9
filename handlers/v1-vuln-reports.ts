// v1's vulnerability reports, which v2 does not have. The reports are imported records (vulnReports, children of
// a repo); these calls answer in the reference's three shapes:
//   GET /registry/v1/repos/{repo}/digests/{digest}/vulnreport  the latest report of one image (tenant.VulnReport)
//   GET /registry/v1/vuln_reports?repoId|digest&tag&scanner.*&createdSince            {items: [registry.VulnReport]}
//   GET /registry/v1/vuln_reports/counts?repo&tag&from&to                         {items: [VulnCountReport]}
// Reading one image's report takes vuln_reports.list (pull roles hold it); the lists take vuln_report.list.
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Principal } from '../runtime/authorization.js';
import { capabilityScope } from '../runtime/authorization.js';
import { invalidArgument, notFound, type FieldViolation } from '../runtime/errors.js';
import { parseListRequest } from '../runtime/list-request.js';
import type { ResourceModel } from '../runtime/model.js';
import { canonicalTimestamp, type Row } from '../runtime/records.js';
import type { Where } from '../runtime/resources.js';
import { pathParams } from '../runtime/route-operations.js';
import { parentOf } from '../runtime/uid.js';
import { checkParameterNames } from '../runtime/validation.js';
import type { V1Deps, V1Extension } from '../runtime/v1/adapter.js';

const severities = ['CRITICAL', 'HIGH', 'MEDIUM', 'LOW', 'NEGLIGIBLE', 'UNKNOWN'] as const;
const countField: Record<(typeof severities)[number], string> = {
  CRITICAL: 'critCveIds',
  HIGH: 'highCveIds',
  MEDIUM: 'medCveIds',
  LOW: 'lowCveIds',
  NEGLIGIBLE: 'negligibleCveIds',
  UNKNOWN: 'unknownCveIds',
};

/** Reads the query: only the named parameters, each once; timestamps must parse. */
function readQuery(ctx: Context, names: string[], timestamps: string[]): Record<string, string | undefined> {
  const problems: FieldViolation[] = [];
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(ctx.query)) {
    if (!names.includes(name))
      problems.push({ field: name, description: `unknown parameter; this call takes ${names.join(', ')}` });
    else if (typeof value !== 'string') problems.push({ field: name, description: 'give it once' });
    else if (value !== '' && timestamps.includes(name) && Number.isNaN(Date.parse(value)))
      problems.push({ field: name, description: 'must be an RFC 3339 timestamp' });
    else if (value !== '') out[name] = timestamps.includes(name) ? canonicalTimestamp(value) : value;
  }
  if (problems.length > 0) throw invalidArgument(problems);
  return out;
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

function addVulnReportRoutes(
  router: Router,
  reports: ResourceModel,
  _shape: unknown,
  { model, resources, policy }: V1Deps,
): void {
  const single = ['CAP_TENANT_VULN_REPORTS_LIST'];
  const listed = ['CAP_VULN_REPORT_LIST'];
  const principal = (ctx: Context) => ctx.state.principal as Principal;

  /** Every report matching, newest first, of those the caller may see. */
  const allReports = async (ctx: Context, capability: string[], query: Row, scope: Where[]): Promise<Row[]> => {
    const visible = await policy.visibility(principal(ctx), capability, reports);
    if (!visible) return [];
    return resources.listAll(reports, parseListRequest({ ...query, order_by: 'created_at desc' }, reports), [
      ...visible,
      ...scope,
    ]);
  };

  router.get(/^\/registry\/v1\/repos\/(.+)\/digests\/([^/]+)\/vulnreport$/, async (ctx) => {
    checkParameterNames(ctx.query);
    const { uid: repo, digest } = pathParams(ctx, ['uid', 'digest']);
    await policy.requireCapability(principal(ctx), single, capabilityScope(model, reports, repo));
    const visible = (await policy.visibility(principal(ctx), single, reports))!;
    const req = parseListRequest({ digest, order_by: 'created_at desc', page_size: 1 }, reports);
    const [latest] = (await resources.list(reports, req, [...visible, { parentUid: repo }])).items;
    if (!latest) throw notFound(reports.type, `${repo} ${digest}`);
    ctx.body = tenantReport(latest);
  });

  router.get('/registry/v1/vuln_reports', async (ctx) => {
    const q = readQuery(
      ctx,
      ['repoId', 'digest', 'tag', 'scanner.name', 'scanner.version', 'scanner.dbBuildTime', 'createdSince'],
      ['scanner.dbBuildTime', 'createdSince'],
    );
    if (!q.repoId && !q.digest) throw invalidArgument([{ field: 'repoId', description: 'give repoId or digest' }]);
    const scanner = Object.fromEntries(
      ['name', 'version', 'dbBuildTime'].filter((k) => q[`scanner.${k}`]).map((k) => [k, q[`scanner.${k}`]]),
    );
    const scope: Where[] = [
      // A digest names one image wherever it is; it takes precedence over the repo, and the tag is then ignored.
      ...(q.digest ? [] : [{ parentUid: q.repoId }]),
      ...(Object.keys(scanner).length > 0 ? [{ scanner }] : []),
    ];
    const query = q.digest
      ? { digest: q.digest, createdSince: q.createdSince }
      : { tag: q.tag, createdSince: q.createdSince };
    ctx.body = { items: (await allReports(ctx, listed, query, scope)).map(registryReport) };
  });

  router.get('/registry/v1/vuln_reports/counts', async (ctx) => {
    const q = readQuery(ctx, ['repo', 'tag', 'from', 'to'], ['from', 'to']);
    const repos = resources.tableOf('repos');
    const named = q.repo ? await repos.find({ name: q.repo }, [{ property: 'uid', desc: false }], -1) : undefined;
    if (named?.length === 0) {
      ctx.body = { items: [] };
      return;
    }
    const scope: Where[] = [
      ...(named ? [{ parentUid: { $in: named.map((r) => r.uid) } }] : []),
      ...(q.to ? [{ createTime: { $lte: q.to } }] : []),
    ];
    const found = await allReports(ctx, listed, { tag: q.tag, createdSince: q.from }, scope);
    const parents = [...new Set(found.map((r) => parentOf(r.uid as string)!))];
    const names = new Map(
      (named ?? (await repos.find({ uid: { $in: parents } }, [{ property: 'uid', desc: false }], -1))).map((r) => [
        r.uid,
        r.name,
      ]),
    );
    ctx.body = { items: found.map((r) => countReport(r, names.get(parentOf(r.uid as string)!) ?? '')) };
  });
}

export const vulnReports: V1Extension = { routes: addVulnReportRoutes };
