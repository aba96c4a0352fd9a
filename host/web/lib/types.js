// The shapes of the server's answers the page reads (docs/api.md), for `tsc --checkJs`
// (tests/web). Nothing runs here.

/**
 * A run in a list (ListBatchInstances).
 * @typedef {object} Listed
 * @property {number} batchInstanceId
 * @property {string} batchName
 * @property {string} user
 * @property {string} state waiting, running, finished, failed, halted, interrupted
 * @property {string} start
 * @property {string | null} [end]
 * @property {number} [batchId]
 * @property {string} [plannedStart] wall-clock text in the service zone
 * @property {boolean} [plannedSecond] the second occurrence of a time the autumn change repeats
 * @property {number} [lateSeconds]
 * @property {boolean} [late]
 * @property {string[]} [runningOn]
 * @property {number} [backfillId]
 */

/**
 * What a run was asked to run: a sheet (S), folder (F), action (A) or batch (B) by id.
 * @typedef {object} Element
 * @property {string} elementType
 * @property {number} elementId
 */

/**
 * One failed try of an action that was tried again.
 * @typedef {object} Try
 * @property {number} attempt
 * @property {string} [host]
 * @property {string} [start]
 * @property {string} end
 * @property {string} error
 * @property {boolean} counted
 * @property {string} retryAt
 */

/**
 * An action of a run.
 * @typedef {object} ActionRun
 * @property {number} actionId
 * @property {number} sheetId
 * @property {string} name
 * @property {string} module
 * @property {string} state D waiting for inputs, W ready, R running, F finished, E failed, S skipped, H halted
 * @property {string | null} [start]
 * @property {string | null} [end]
 * @property {number} rowsRead
 * @property {number} rowsWritten
 * @property {number} rowsUpdated
 * @property {number} rowsDeleted
 * @property {string | null} [error]
 * @property {string[]} log
 * @property {string} [host]
 * @property {number[]} [dependsOn]
 * @property {number} [deployId]
 * @property {{connectionId: number, schema: string, object: string, batchInstanceId: number, actionId: number}} [waitingFor]
 * @property {string} [retryAt]
 * @property {Try[]} [tries]
 */

/**
 * A run with its actions (GetBatchInstance, WaitBatchInstance).
 * @typedef {Listed & {elements?: Element[], scheduleDate?: string, scheduleDateSet?: boolean,
 *   actions: ActionRun[], version?: string}} Instance
 */

/**
 * Who the server takes the browser for (WhoAmI).
 * @typedef {object} Me
 * @property {string} user
 * @property {string} role
 * @property {string[]} rights
 * @property {string} via
 * @property {string} [timeZone] the service time zone
 */

/**
 * A folder of the repository's tree (ListSheets).
 * @typedef {object} FolderItem
 * @property {number} folderId
 * @property {string} path `/a/b`
 */

/**
 * A sheet of the repository's tree (ListSheets).
 * @typedef {object} SheetItem
 * @property {number} sheetId
 * @property {string} name
 * @property {number} folderId
 * @property {string} folder its folder's path
 */

/**
 * The repository's folders and sheets (ListSheets).
 * @typedef {object} Tree
 * @property {FolderItem[]} folders
 * @property {SheetItem[]} sheets the first ones, by folder path and order, when `more`
 * @property {boolean} more whether the repository holds more sheets than listed
 */

/**
 * A node of a deployed sheet, as drawn: its place and what it is.
 * @typedef {object} SheetNode
 * @property {number} nodeId negative for an object taken from an action's SQL
 * @property {number} type 0 an action, 1 an object
 * @property {number} x
 * @property {number} y
 * @property {number} width 0 when the sheet gave none
 * @property {number} height
 * @property {string} [module] an action's module
 * @property {string} [name] an action's name
 * @property {string} [documentation] an action's documentation
 * @property {string} [action] an action's text (its SQL)
 * @property {string} [attributes] an action's other attributes, as JSON text
 * @property {string} [table] an object's table
 * @property {string[]} [fields] an object's field2 and field3 (left out when empty)
 * @property {number} [objectTypeId] an object's type
 * @property {number} [connectionId] an object's connection
 * @property {string} [dependency] an object's dependency (`Y`)
 */

/**
 * An edge of a deployed sheet.
 * @typedef {object} SheetEdge
 * @property {number} edgeId
 * @property {number} from the node it leaves
 * @property {number} to the node it reaches
 */

/**
 * A deployed sheet as the page draws it, with its last runs (GetSheet).
 * @typedef {object} Sheet
 * @property {number} sheetId
 * @property {string} name
 * @property {number} folderId
 * @property {string} folder its folder's path
 * @property {string} [documentation]
 * @property {SheetNode[]} nodes
 * @property {SheetEdge[]} edges
 * @property {Listed[]} runs the newest ten
 * @property {SheetLink[]} [fedBy] the sheets whose actions write tables it reads
 * @property {SheetLink[]} [feeds] the sheets whose actions read tables it writes
 */

/**
 * Another sheet sharing tables with a sheet (GetSheet).
 * @typedef {object} SheetLink
 * @property {number} sheetId
 * @property {string} name
 * @property {string} folder
 * @property {string[]} tables
 */

/**
 * A table an action reads or writes (GetLineage).
 * @typedef {object} LineageTable
 * @property {number} connectionId
 * @property {string} schema empty: the connection's default
 * @property {string} table
 */

/**
 * An action that writes or reads the table asked for (GetLineage).
 * @typedef {object} LineageAction
 * @property {number} actionId
 * @property {string} actionName
 * @property {number} sheetId
 * @property {string} sheetName
 * @property {string} folder the sheet's folder's path
 * @property {number} connectionId the table's connection
 * @property {string} schema the table's schema (empty: the connection's default)
 * @property {string} table the table as its object type names it
 * @property {LineageTable[]} [reads] left out when empty
 * @property {LineageTable[]} [writes] left out when empty
 */

/**
 * Who writes a table and who reads it (GetLineage).
 * @typedef {object} Lineage
 * @property {LineageAction[]} writers
 * @property {LineageAction[]} readers
 * @property {boolean} truncated whether there were more than the answer holds
 */

/**
 * One change of a deploy: a line of the deploy history (ListDeploys).
 * @typedef {object} DeployChange
 * @property {number} historyId
 * @property {string} kind folder, connection, sheet, batch, notifications or module
 * @property {number} objectId
 * @property {string | null} name its name then (a folder's path), when known
 * @property {string} change created, updated or deleted
 */

/**
 * A deploy of the deploy history (ListDeploys).
 * @typedef {object} Deploy
 * @property {number} deployId
 * @property {string} deployed
 * @property {string} [user] none for deploys made before weft recorded it
 * @property {number} created
 * @property {number} updated
 * @property {number} deleted
 * @property {DeployChange[]} changes its first ones
 * @property {number} more how many more changes it made than `changes` lists
 */

/**
 * The version a change replaced (GetDeployChange).
 * @typedef {object} PreviousVersion
 * @property {number} historyId
 * @property {number | null} deployId
 * @property {string} deployed
 * @property {string | null} definition JSON text
 */

/**
 * One change with the definition it deployed and the one it replaced (GetDeployChange).
 * @typedef {DeployChange & {deployId: number | null, deployed: string, definition: string | null,
 *   previous: PreviousVersion | null}} DeployChangeDetail
 */

/**
 * A notification (ListNotifications).
 * @typedef {object} NotificationEntry
 * @property {number} id
 * @property {string} event started, finished, failed, halted, interrupted, missed, late, actionFailed
 * @property {string} batchName
 * @property {number} [batchInstanceId]
 * @property {number} [actionId] for actionFailed
 * @property {string} channel
 * @property {string} state pending, sent or given_up
 * @property {number} attempts
 * @property {string} created
 * @property {string} [nextAttempt] a pending one's next try
 * @property {string} [sent]
 * @property {string} [lastError]
 */

/**
 * An entry of the audit (ListAudit).
 * @typedef {object} AuditEntry
 * @property {number} id
 * @property {string} at
 * @property {string} host
 * @property {string} user
 * @property {string} via
 * @property {string} client
 * @property {string} command empty for a refusal before the request was read
 * @property {string} outcome done, failed or refused
 * @property {string} what
 */

/**
 * A planned start that passed without a run (ListBatches).
 * @typedef {object} MissedStart
 * @property {string} planned wall-clock text in the service zone
 * @property {string} decided when a host passed it
 * @property {string} reason running, clockGap, `cannotStart: ` and the error, `after: ` and the batches
 */

/**
 * A scheduled batch (ListBatches).
 * @typedef {object} BatchItem
 * @property {number} batchId
 * @property {string} name
 * @property {string} schedule
 * @property {boolean} enabled
 * @property {boolean} [paused] an operator paused it (PauseBatch)
 * @property {string} [pausedBy]
 * @property {string} [pausedAt]
 * @property {MissedStart[]} missed the newest, newest first
 */

/**
 * A planned start of a batch (NextRuns).
 * @typedef {object} NextStart
 * @property {string} planned
 * @property {boolean} secondOccurrence
 * @property {string} local
 * @property {string} utc
 * @property {string | null} utcOffset
 * @property {string | null} clockChange
 */

/**
 * A batch's next planned starts (NextRuns).
 * @typedef {object} NextRuns
 * @property {number} batchId
 * @property {string} name
 * @property {string} schedule
 * @property {string} springGap
 * @property {string} autumnOverlap
 * @property {boolean} enabled
 * @property {string} timeZone the service time zone
 * @property {NextStart[]} starts
 * @property {string} [problem] why the batch does not run
 */

/**
 * What a view gives the router: how to stop following, when it follows anything.
 * @typedef {{stop: () => void} | null} Shown
 */

export {};
