import type Database from 'better-sqlite3';
import { m001Initial } from './001-initial.js';
import { m002Scheduler } from './002-scheduler.js';
import { m003Worktrees } from './003-worktrees.js';
import { m004Cachelab } from './004-cachelab.js';
import { m005Requests } from './005-requests.js';
import { m006Snapshots } from './006-snapshots.js';
import { m007ReadySet } from './007-ready-set.js';
import { m008FleetChains } from './008-fleet-chains.js';
import { m009ClientRequests } from './009-client-requests.js';
import { m010Pulls } from './010-pulls.js';
import { m011UsageTaskIndex } from './011-usage-task-index.js';
import { m012BudgetRequests } from './012-budget-requests.js';

export interface Migration {
  name: string;
  up(db: Database.Database): void;
}

/** Forward-only, numbered: MIGRATIONS[n] takes user_version n to n+1. Never edit a shipped one. */
export const MIGRATIONS: Migration[] = [m001Initial, m002Scheduler, m003Worktrees, m004Cachelab, m005Requests, m006Snapshots, m007ReadySet, m008FleetChains, m009ClientRequests, m010Pulls, m011UsageTaskIndex, m012BudgetRequests];
