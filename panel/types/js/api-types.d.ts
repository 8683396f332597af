// Generated from the management API's OpenAPI document (gateway/api/openapi.ts) by
// tools/codegen/panel-types.ts. Do not edit: change a route's schemas and run `npm run codegen`.
export interface paths {
    "/api/v1/admin/apikeys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Administrators: one page of every user’s keys (or one user’s), with their owner */
        get: operations["adminListApiKeys"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/admin/apikeys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Administrators: revoke anyone’s key (recorded in the audit trail) */
        delete: operations["adminDeleteApiKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/admin/apikeys/{id}/credits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Administrators: top up a key’s credits for its current period (recorded in the audit trail) */
        post: operations["adminAddApiKeyCredits"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/admin/apikeys/{id}/limits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Administrators: override a key’s rate limit, named limits and credits (recorded in the audit trail) */
        put: operations["adminSetApiKeyLimits"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/admin/apikeys/import": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Import keys made by another gateway, by their SHA-256 (administrators) */
        post: operations["adminImportApiKeys"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/admin/identities/{name}/credits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Administrators: top up the credits an identity’s keys share (recorded in the audit trail) */
        post: operations["adminAddIdentityCredits"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/admin/identities/{name}/limits": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Administrators: set an identity’s limits and credits, which all its keys share (recorded in the audit trail) */
        put: operations["adminSetIdentityLimits"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/admin/offboard": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Administrators: revoke every key of one user, and remove their webhooks, in one action */
        post: operations["offboardUser"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/admin/usage/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Administrators: usage per key, identity, target and minute as CloudEvents, from a cursor */
        get: operations["adminExportUsage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/apikeys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One page of your keys, newest first */
        get: operations["listApiKeys"];
        put?: never;
        /** Create a key; the answer holds the key, the only time it is sent */
        post: operations["createApiKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/apikeys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One of your keys */
        get: operations["getApiKey"];
        put?: never;
        post?: never;
        /** Delete a key: refused on every gateway replica at once */
        delete: operations["deleteApiKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/apikeys/{id}/roll": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A new key with the same grant; the old one works until its grace period ends */
        post: operations["rollApiKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/apikeys/{id}/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Requests and refusals per minute (24 h) and per hour (30 days), top endpoints */
        get: operations["getApiKeyUsage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/audit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Events of your keys and identities, newest first */
        get: operations["listAuditEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/identities": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Your identities (an administrator sees everyone’s), with their credits now */
        get: operations["listIdentities"];
        put?: never;
        /** Make an identity (a customer, a team) whose keys share its limits and credits */
        post: operations["createIdentity"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/identities/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One of your identities, with its credits now */
        get: operations["getIdentity"];
        put?: never;
        post?: never;
        /** Delete an identity no key belongs to */
        delete: operations["deleteIdentity"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/leaked-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A secret-scanning service reports keys found in public code (GitHub partner format, signed with its published keys) */
        post: operations["reportLeakedKeys"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Who your token says you are, and whether you are an administrator */
        get: operations["whoami"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/models": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The Models: phase, replicas, what to fix, tensors, calls over the last hour, an example request */
        get: operations["listModels"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/modules": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** What a new key may be scoped to: your workflows, and the platform roles */
        get: operations["listModules"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Your webhook endpoints (an administrator sees everyone’s) */
        get: operations["listWebhooks"];
        put?: never;
        /** Register an endpoint for your key events; the answer holds its signing secret, the only time it is sent */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Remove a webhook endpoint */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An endpoint’s recent deliveries, newest first: delivered, pending (with the next attempt) or failed */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/{id}/deliveries/{delivery}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a delivery again now, with its attempts counted afresh */
        post: operations["replayWebhookDelivery"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/webhooks/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Give an endpoint a new signing secret (shown in this answer only); the old one stops at once */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events/platform/api/v1/{resource}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A platform resource, through its upstream (GET, PUT, POST as the key’s roles allow) */
        get: operations["platformResource"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/health/live": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The gateway is up */
        get: operations["v2Live"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/health/ready": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The gateway can check keys now */
        get: operations["v2Ready"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/models/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A model’s metadata, as its runtime declares it */
        get: operations["v2ModelMetadata"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v2/models/{name}/infer": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Inference; the request is checked against the model’s metadata first */
        post: operations["v2Infer"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        ApiKey: {
            allowedCidrs?: string[];
            /** Format: date-time */
            createdAt?: string;
            /** @description Calls the key may make, in all or each UTC day or month with refill */
            credits?: {
                amount: number;
                /** @enum {string} */
                refill?: "daily" | "monthly";
            };
            /** Format: date-time */
            expiresAt?: string;
            id: string;
            /** @description The identity the key belongs to: its limits and credits hold across all its keys */
            identity?: string;
            /**
             * @description Made by another gateway and imported by its SHA-256 (POST /admin/apikeys/import)
             * @constant
             */
            imported?: true;
            /** Format: date-time */
            lastUsed?: string;
            /** @description Named limits besides rateLimit; a call must fit them all */
            limits?: {
                name: string;
                requests: number;
                windowSeconds: number;
            }[];
            /** @description The models the key may call (names or * patterns); absent: any */
            models?: string[];
            /** @enum {string} */
            module: "bda" | "platform";
            name?: string;
            rateLimit?: {
                requests: number;
                windowSeconds: number;
            };
            /** @description Calls refused although the key exists */
            refusalCount: number;
            requestCount: number;
            roles: string[];
            /** @description Set once the key was rolled: the key that replaced it and the end of its grace period */
            rolled?: {
                /** Format: date-time */
                at: string;
                /** Format: date-time */
                graceEndsAt: string;
                to: string;
            };
            /** @description The key this one replaced, when it was made by a roll */
            rolledFrom?: string;
            /** @description Rows of the inference batches its admitted calls sent */
            rowCount: number;
            /** @description The first 8 characters of the key (of an imported key, those its administrator gave) */
            start: string;
            /**
             * @description rolled while its grace period runs; expired once past its expiry or its grace end
             * @enum {string}
             */
            state: "active" | "rolled" | "expired";
        };
        ApiKeyPage: {
            items: {
                allowedCidrs?: string[];
                /** Format: date-time */
                createdAt?: string;
                /** @description Calls the key may make, in all or each UTC day or month with refill */
                credits?: {
                    amount: number;
                    /** @enum {string} */
                    refill?: "daily" | "monthly";
                };
                /** Format: date-time */
                expiresAt?: string;
                id: string;
                /** @description The identity the key belongs to: its limits and credits hold across all its keys */
                identity?: string;
                /**
                 * @description Made by another gateway and imported by its SHA-256 (POST /admin/apikeys/import)
                 * @constant
                 */
                imported?: true;
                /** Format: date-time */
                lastUsed?: string;
                /** @description Named limits besides rateLimit; a call must fit them all */
                limits?: {
                    name: string;
                    requests: number;
                    windowSeconds: number;
                }[];
                /** @description The models the key may call (names or * patterns); absent: any */
                models?: string[];
                /** @enum {string} */
                module: "bda" | "platform";
                name?: string;
                rateLimit?: {
                    requests: number;
                    windowSeconds: number;
                };
                /** @description Calls refused although the key exists */
                refusalCount: number;
                requestCount: number;
                /** @description Requests per hour over the last 24 hours, oldest first */
                requestsPerHour: number[];
                roles: string[];
                /** @description Set once the key was rolled: the key that replaced it and the end of its grace period */
                rolled?: {
                    /** Format: date-time */
                    at: string;
                    /** Format: date-time */
                    graceEndsAt: string;
                    to: string;
                };
                /** @description The key this one replaced, when it was made by a roll */
                rolledFrom?: string;
                /** @description Rows of the inference batches its admitted calls sent */
                rowCount: number;
                /** @description The first 8 characters of the key (of an imported key, those its administrator gave) */
                start: string;
                /**
                 * @description rolled while its grace period runs; expired once past its expiry or its grace end
                 * @enum {string}
                 */
                state: "active" | "rolled" | "expired";
            }[];
            nextCursor?: string;
        };
        ApiKeyUsage: {
            credits?: {
                amount: number;
                /** @enum {string} */
                refill?: "daily" | "monthly";
                /**
                 * Format: date-time
                 * @description When the next refill comes
                 */
                refillsAt?: string;
                remaining: number;
                /** @description Spent this period (below 0 after a top-up larger than what was spent) */
                spent: number;
            };
            id: string;
            /** @description The credits of the key’s identity, shared with its other keys */
            identityCredits?: {
                amount: number;
                /** @enum {string} */
                refill?: "daily" | "monthly";
                /**
                 * Format: date-time
                 * @description When the next refill comes
                 */
                refillsAt?: string;
                remaining: number;
                /** @description Spent this period (below 0 after a top-up larger than what was spent) */
                spent: number;
            };
            /** @description Each named limit of the key’s identity in its current window, shared with its other keys */
            identityLimits?: {
                /** @description Absent for the key’s own rateLimit */
                name?: string;
                requests: number;
                /**
                 * Format: date-time
                 * @description When the next window begins
                 */
                resetsAt: string;
                /** @description Counted in this window (replicas lease a few calls ahead) */
                used: number;
                windowSeconds: number;
            }[];
            /** Format: date-time */
            lastUsed?: string;
            /** @description Each of the key’s limits (its rateLimit unnamed) in its current window */
            limits?: {
                /** @description Absent for the key’s own rateLimit */
                name?: string;
                requests: number;
                /**
                 * Format: date-time
                 * @description When the next window begins
                 */
                resetsAt: string;
                /** @description Counted in this window (replicas lease a few calls ahead) */
                used: number;
                windowSeconds: number;
            }[];
            /** @description The last 30 days, oldest first */
            perHour: {
                /** Format: date-time */
                at: string;
                refusals: number;
                requests: number;
                /** @description Rows of the inference batches admitted (the first dimension of their inputs) */
                rows: number;
            }[];
            /** @description The last 24 hours, oldest first */
            perMinute: {
                /** Format: date-time */
                at: string;
                refusals: number;
                requests: number;
                /** @description Rows of the inference batches admitted (the first dimension of their inputs) */
                rows: number;
            }[];
            refusalCount: number;
            requestCount: number;
            /** @description Rows of the inference batches the key’s admitted calls sent (the first dimension of their inputs) */
            rowCount: number;
            topEndpoints: {
                endpoint: string;
                requests: number;
            }[];
        };
        AuditPage: {
            items: {
                /** @enum {string} */
                action: "key.created" | "key.rolled" | "key.deleted" | "key.expired" | "key.refused" | "key.limits_changed" | "key.leaked" | "key.credits_added" | "identity.created" | "identity.deleted" | "identity.limits_changed" | "identity.credits_added" | "webhook.created" | "webhook.deleted";
                actor: string;
                address?: string;
                at: string;
                detail?: {
                    [key: string]: string | number;
                };
                id: string;
                identity?: string;
                keyId?: string;
                keyName?: string;
                keyStart?: string;
                owner: string;
                traceId?: string;
            }[];
            nextCursor?: string;
        };
        Caller: {
            /** @description A member of an administrator group: may act on every user’s keys */
            admin: boolean;
            groups: string[];
            name?: string;
            subject: string;
        };
        CreatedApiKey: {
            allowedCidrs?: string[];
            /** Format: date-time */
            createdAt?: string;
            /** @description Calls the key may make, in all or each UTC day or month with refill */
            credits?: {
                amount: number;
                /** @enum {string} */
                refill?: "daily" | "monthly";
            };
            /** Format: date-time */
            expiresAt?: string;
            id: string;
            /** @description The identity the key belongs to: its limits and credits hold across all its keys */
            identity?: string;
            /**
             * @description Made by another gateway and imported by its SHA-256 (POST /admin/apikeys/import)
             * @constant
             */
            imported?: true;
            /** @description The key itself: shown in this answer only, never again */
            key: string;
            /** Format: date-time */
            lastUsed?: string;
            /** @description Named limits besides rateLimit; a call must fit them all */
            limits?: {
                name: string;
                requests: number;
                windowSeconds: number;
            }[];
            /** @description The models the key may call (names or * patterns); absent: any */
            models?: string[];
            /** @enum {string} */
            module: "bda" | "platform";
            name?: string;
            rateLimit?: {
                requests: number;
                windowSeconds: number;
            };
            /** @description Calls refused although the key exists */
            refusalCount: number;
            requestCount: number;
            roles: string[];
            /** @description Set once the key was rolled: the key that replaced it and the end of its grace period */
            rolled?: {
                /** Format: date-time */
                at: string;
                /** Format: date-time */
                graceEndsAt: string;
                to: string;
            };
            /** @description The key this one replaced, when it was made by a roll */
            rolledFrom?: string;
            /** @description Rows of the inference batches its admitted calls sent */
            rowCount: number;
            /** @description The first 8 characters of the key (of an imported key, those its administrator gave) */
            start: string;
            /**
             * @description rolled while its grace period runs; expired once past its expiry or its grace end
             * @enum {string}
             */
            state: "active" | "rolled" | "expired";
        };
        CreditsState: {
            amount: number;
            /** @enum {string} */
            refill?: "daily" | "monthly";
            /**
             * Format: date-time
             * @description When the next refill comes
             */
            refillsAt?: string;
            remaining: number;
            /** @description Spent this period (below 0 after a top-up larger than what was spent) */
            spent: number;
        };
        Delivery: {
            attempts: number;
            /** Format: date-time */
            createdAt: string;
            /** @description The message id, sent as webhook-id on every attempt */
            id: string;
            /** Format: date-time */
            lastAttemptAt?: string;
            lastError?: string;
            /** @description The receiver’s HTTP status on the last attempt */
            lastStatus?: number;
            /** Format: date-time */
            nextAttemptAt?: string;
            /** @enum {string} */
            status: "pending" | "delivered" | "failed";
            type: string;
        };
        Error: {
            /** @description Stable, machine-readable */
            code: string;
            /** @description What went wrong and what to do about it */
            error: string;
            /** @description The request field at fault */
            field?: string;
        };
        Identity: {
            /** Format: date-time */
            createdAt?: string;
            /** @description Credits shared by all its keys, now */
            credits?: {
                amount: number;
                /** @enum {string} */
                refill?: "daily" | "monthly";
                /**
                 * Format: date-time
                 * @description When the next refill comes
                 */
                refillsAt?: string;
                remaining: number;
                /** @description Spent this period (below 0 after a top-up larger than what was spent) */
                spent: number;
            };
            displayName?: string;
            /** @description How many keys belong to it (not in listings) */
            keys?: number;
            /** @description Named limits counted across all its keys */
            limits?: {
                name: string;
                requests: number;
                windowSeconds: number;
            }[];
            /** @description Its id, in keys and URLs */
            name: string;
            /** @description The subject of the user who made it; only they add keys to it */
            owner: string;
            ownerName?: string;
            /** @description What its keys (those it has now) have done in all: calls admitted and refused, rows of inference batches (not in listings) */
            usage?: {
                refusals: number;
                requests: number;
                rows: number;
            };
        };
        IdentityList: {
            items: {
                /** Format: date-time */
                createdAt?: string;
                /** @description Credits shared by all its keys, now */
                credits?: {
                    amount: number;
                    /** @enum {string} */
                    refill?: "daily" | "monthly";
                    /**
                     * Format: date-time
                     * @description When the next refill comes
                     */
                    refillsAt?: string;
                    remaining: number;
                    /** @description Spent this period (below 0 after a top-up larger than what was spent) */
                    spent: number;
                };
                displayName?: string;
                /** @description How many keys belong to it (not in listings) */
                keys?: number;
                /** @description Named limits counted across all its keys */
                limits?: {
                    name: string;
                    requests: number;
                    windowSeconds: number;
                }[];
                /** @description Its id, in keys and URLs */
                name: string;
                /** @description The subject of the user who made it; only they add keys to it */
                owner: string;
                ownerName?: string;
                /** @description What its keys (those it has now) have done in all: calls admitted and refused, rows of inference batches (not in listings) */
                usage?: {
                    refusals: number;
                    requests: number;
                    rows: number;
                };
            }[];
        };
        ModelMetadata: {
            inputs: unknown;
            name: string;
            outputs: unknown;
            parameters: unknown;
            platform?: string | null;
            versions?: string[] | null;
        };
        ModelPage: {
            items: {
                defaultVersion?: string;
                /** @description A V2 inference request built from the declared inputs */
                exampleRequest?: {
                    inputs: {
                        data: (number | string | boolean)[];
                        datatype: string;
                        name: string;
                        parameters?: {
                            content_type: string;
                        };
                        shape: number[];
                    }[];
                };
                inputs: {
                    datatype: string;
                    name: string;
                    shape: number[];
                }[];
                /** @description The condition that is not met, and what to change */
                message?: string;
                name: string;
                outputs: {
                    datatype: string;
                    name: string;
                    shape: number[];
                }[];
                /** @description Calls over the last hour, oldest first, from every gateway replica */
                perMinute: {
                    /** Format: date-time */
                    at: string;
                    calls: number;
                    errors: number;
                    meanLatencyMs: number;
                }[];
                /** @enum {string} */
                phase: "Pending" | "Loading" | "Ready" | "Failed";
                readyReplicas: number;
                replicas: number;
                /** @description spec.rollout's canary analysis, as the operator last reported it */
                rollout?: {
                    /** @description The callers the canary serves, with spec.rollout.cohort */
                    cohort?: string;
                    message?: string;
                    /** @enum {string} */
                    phase: "Waiting" | "Progressing" | "Promoted" | "RolledBack";
                    version: string;
                    weight: number;
                };
                /** @description spec.shadow and its copies over the last hour: how many agreed with the serving version, failed, and both mean runtime times */
                shadow?: {
                    agreed: number;
                    agreementRate: number | null;
                    calls: number;
                    failed: number;
                    meanLatencyMs: number;
                    percent: number;
                    servingMeanLatencyMs: number;
                    version: string;
                };
                /** @description The default version's model folder */
                storageUri: string;
                /** @description Each version (one unnamed for a model without spec.versions), with its share of calls */
                versions: {
                    /** @description The callers whose calls it takes, every one of them (a cohort, besides its traffic share) */
                    cohort?: string;
                    name: string;
                    /** @enum {string} */
                    phase: "Pending" | "Loading" | "Ready" | "Failed" | "Draining";
                    readyReplicas: number;
                    storageUri?: string;
                    traffic: number;
                }[];
                workflow?: string;
            }[];
        };
        Modules: {
            modules: {
                description: string;
                /** @enum {string} */
                module: "bda" | "platform";
                roles: {
                    description?: string;
                    id: string;
                }[];
            }[];
        };
        OffboardResult: {
            owner: string;
            /** @description Ids of the keys revoked now */
            revoked: string[];
            /** @description Ids of the user’s webhook endpoints removed */
            webhooksRemoved: string[];
        };
        OwnedApiKeyPage: {
            items: {
                allowedCidrs?: string[];
                /** Format: date-time */
                createdAt?: string;
                /** @description Calls the key may make, in all or each UTC day or month with refill */
                credits?: {
                    amount: number;
                    /** @enum {string} */
                    refill?: "daily" | "monthly";
                };
                /** Format: date-time */
                expiresAt?: string;
                id: string;
                /** @description The identity the key belongs to: its limits and credits hold across all its keys */
                identity?: string;
                /**
                 * @description Made by another gateway and imported by its SHA-256 (POST /admin/apikeys/import)
                 * @constant
                 */
                imported?: true;
                /** Format: date-time */
                lastUsed?: string;
                /** @description Named limits besides rateLimit; a call must fit them all */
                limits?: {
                    name: string;
                    requests: number;
                    windowSeconds: number;
                }[];
                /** @description The models the key may call (names or * patterns); absent: any */
                models?: string[];
                /** @enum {string} */
                module: "bda" | "platform";
                name?: string;
                /** @description The subject of the user who created the key */
                owner: string;
                /** @description Their name when they created it */
                ownerName?: string;
                rateLimit?: {
                    requests: number;
                    windowSeconds: number;
                };
                /** @description Calls refused although the key exists */
                refusalCount: number;
                requestCount: number;
                /** @description Requests per hour over the last 24 hours, oldest first */
                requestsPerHour: number[];
                roles: string[];
                /** @description Set once the key was rolled: the key that replaced it and the end of its grace period */
                rolled?: {
                    /** Format: date-time */
                    at: string;
                    /** Format: date-time */
                    graceEndsAt: string;
                    to: string;
                };
                /** @description The key this one replaced, when it was made by a roll */
                rolledFrom?: string;
                /** @description Rows of the inference batches its admitted calls sent */
                rowCount: number;
                /** @description The first 8 characters of the key (of an imported key, those its administrator gave) */
                start: string;
                /**
                 * @description rolled while its grace period runs; expired once past its expiry or its grace end
                 * @enum {string}
                 */
                state: "active" | "rolled" | "expired";
            }[];
            nextCursor?: string;
        };
        RolledApiKey: {
            allowedCidrs?: string[];
            /** Format: date-time */
            createdAt?: string;
            /** @description Calls the key may make, in all or each UTC day or month with refill */
            credits?: {
                amount: number;
                /** @enum {string} */
                refill?: "daily" | "monthly";
            };
            /** Format: date-time */
            expiresAt?: string;
            id: string;
            /** @description The identity the key belongs to: its limits and credits hold across all its keys */
            identity?: string;
            /**
             * @description Made by another gateway and imported by its SHA-256 (POST /admin/apikeys/import)
             * @constant
             */
            imported?: true;
            /** @description The key itself: shown in this answer only, never again */
            key: string;
            /** Format: date-time */
            lastUsed?: string;
            /** @description Named limits besides rateLimit; a call must fit them all */
            limits?: {
                name: string;
                requests: number;
                windowSeconds: number;
            }[];
            /** @description The models the key may call (names or * patterns); absent: any */
            models?: string[];
            /** @enum {string} */
            module: "bda" | "platform";
            name?: string;
            rateLimit?: {
                requests: number;
                windowSeconds: number;
            };
            /** @description Calls refused although the key exists */
            refusalCount: number;
            requestCount: number;
            roles: string[];
            /** @description The old key, as it is after the roll */
            rolled: {
                allowedCidrs?: string[];
                /** Format: date-time */
                createdAt?: string;
                /** @description Calls the key may make, in all or each UTC day or month with refill */
                credits?: {
                    amount: number;
                    /** @enum {string} */
                    refill?: "daily" | "monthly";
                };
                /** Format: date-time */
                expiresAt?: string;
                id: string;
                /** @description The identity the key belongs to: its limits and credits hold across all its keys */
                identity?: string;
                /**
                 * @description Made by another gateway and imported by its SHA-256 (POST /admin/apikeys/import)
                 * @constant
                 */
                imported?: true;
                /** Format: date-time */
                lastUsed?: string;
                /** @description Named limits besides rateLimit; a call must fit them all */
                limits?: {
                    name: string;
                    requests: number;
                    windowSeconds: number;
                }[];
                /** @description The models the key may call (names or * patterns); absent: any */
                models?: string[];
                /** @enum {string} */
                module: "bda" | "platform";
                name?: string;
                rateLimit?: {
                    requests: number;
                    windowSeconds: number;
                };
                /** @description Calls refused although the key exists */
                refusalCount: number;
                requestCount: number;
                roles: string[];
                /** @description Set once the key was rolled: the key that replaced it and the end of its grace period */
                rolled?: {
                    /** Format: date-time */
                    at: string;
                    /** Format: date-time */
                    graceEndsAt: string;
                    to: string;
                };
                /** @description The key this one replaced, when it was made by a roll */
                rolledFrom?: string;
                /** @description Rows of the inference batches its admitted calls sent */
                rowCount: number;
                /** @description The first 8 characters of the key (of an imported key, those its administrator gave) */
                start: string;
                /**
                 * @description rolled while its grace period runs; expired once past its expiry or its grace end
                 * @enum {string}
                 */
                state: "active" | "rolled" | "expired";
            };
            /** @description The key this one replaced, when it was made by a roll */
            rolledFrom?: string;
            /** @description Rows of the inference batches its admitted calls sent */
            rowCount: number;
            /** @description The first 8 characters of the key (of an imported key, those its administrator gave) */
            start: string;
            /**
             * @description rolled while its grace period runs; expired once past its expiry or its grace end
             * @enum {string}
             */
            state: "active" | "rolled" | "expired";
        };
        Webhook: {
            /**
             * @description An administrator’s: every user’s key events
             * @constant
             */
            allOwners?: true;
            /** Format: date-time */
            createdAt?: string;
            description?: string;
            events: ("key.created" | "key.rolled" | "key.revoked" | "key.offboarded" | "key.expiring" | "key.leaked" | "key.rate_limited" | "credits.low" | "credits.exhausted" | "usage.minute")[];
            /** @description Days before a key’s expiry that key.expiring is sent (default 7) */
            expiringDays?: number;
            id: string;
            owner: string;
            url: string;
        };
        WebhookWithSecret: {
            /**
             * @description An administrator’s: every user’s key events
             * @constant
             */
            allOwners?: true;
            /** Format: date-time */
            createdAt?: string;
            description?: string;
            events: ("key.created" | "key.rolled" | "key.revoked" | "key.offboarded" | "key.expiring" | "key.leaked" | "key.rate_limited" | "credits.low" | "credits.exhausted" | "usage.minute")[];
            /** @description Days before a key’s expiry that key.expiring is sent (default 7) */
            expiringDays?: number;
            id: string;
            owner: string;
            /** @description The signing secret (Standard Webhooks, whsec_…): shown in this answer only; rotate to get another */
            secret: string;
            url: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    adminListApiKeys: {
        parameters: {
            query?: {
                cursor?: string;
                limit?: number;
                module?: "bda" | "platform";
                /** @description Only this user’s keys (the subject shown as `owner`) */
                owner?: string;
                search?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of keys */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OwnedApiKeyPage"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminDeleteApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminAddApiKeyCredits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    add: number;
                };
            };
        };
        responses: {
            /** @description The key’s credits now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreditsState"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminSetApiKeyLimits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description null removes them; absent leaves them */
                    credits?: {
                        amount: number;
                        /** @enum {string} */
                        refill?: "daily" | "monthly";
                    } | null;
                    /** @description null removes them; absent leaves them */
                    limits?: {
                        name: string;
                        requests: number;
                        windowSeconds: number;
                    }[] | null;
                    /** @description null removes it; absent leaves it */
                    rateLimit?: {
                        requests: number;
                        windowSeconds: number;
                    } | null;
                };
            };
        };
        responses: {
            /** @description The key with its new limits */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKey"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminImportApiKeys: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    keys: {
                        allowedCidrs?: string[];
                        credits?: {
                            amount: number;
                            /** @enum {string} */
                            refill?: "daily" | "monthly";
                        };
                        /** Format: date-time */
                        expiresAt?: string;
                        hash: string;
                        limits?: {
                            name: string;
                            requests: number;
                            windowSeconds: number;
                        }[];
                        models?: string[];
                        /** @enum {string} */
                        module: "bda" | "platform";
                        name?: string;
                        owner: string;
                        ownerName?: string;
                        rateLimit?: {
                            requests: number;
                            windowSeconds: number;
                        };
                        roles: string[];
                        start: string;
                    }[];
                };
            };
        };
        responses: {
            /** @description The keys imported, and those imported before */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description The keys imported by this call, in the order sent */
                        imported: {
                            allowedCidrs?: string[];
                            /** Format: date-time */
                            createdAt?: string;
                            /** @description Calls the key may make, in all or each UTC day or month with refill */
                            credits?: {
                                amount: number;
                                /** @enum {string} */
                                refill?: "daily" | "monthly";
                            };
                            /** Format: date-time */
                            expiresAt?: string;
                            id: string;
                            /** @description The identity the key belongs to: its limits and credits hold across all its keys */
                            identity?: string;
                            /**
                             * @description Made by another gateway and imported by its SHA-256 (POST /admin/apikeys/import)
                             * @constant
                             */
                            imported?: true;
                            /** Format: date-time */
                            lastUsed?: string;
                            /** @description Named limits besides rateLimit; a call must fit them all */
                            limits?: {
                                name: string;
                                requests: number;
                                windowSeconds: number;
                            }[];
                            /** @description The models the key may call (names or * patterns); absent: any */
                            models?: string[];
                            /** @enum {string} */
                            module: "bda" | "platform";
                            name?: string;
                            rateLimit?: {
                                requests: number;
                                windowSeconds: number;
                            };
                            /** @description Calls refused although the key exists */
                            refusalCount: number;
                            requestCount: number;
                            roles: string[];
                            /** @description Set once the key was rolled: the key that replaced it and the end of its grace period */
                            rolled?: {
                                /** Format: date-time */
                                at: string;
                                /** Format: date-time */
                                graceEndsAt: string;
                                to: string;
                            };
                            /** @description The key this one replaced, when it was made by a roll */
                            rolledFrom?: string;
                            /** @description Rows of the inference batches its admitted calls sent */
                            rowCount: number;
                            /** @description The first 8 characters of the key (of an imported key, those its administrator gave) */
                            start: string;
                            /**
                             * @description rolled while its grace period runs; expired once past its expiry or its grace end
                             * @enum {string}
                             */
                            state: "active" | "rolled" | "expired";
                        }[];
                        /** @description Keys of the call imported before (the same hash, owner, module and roles): left as they are */
                        unchanged: {
                            id: string;
                            index: number;
                        }[];
                    };
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminAddIdentityCredits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    add: number;
                };
            };
        };
        responses: {
            /** @description The identity’s credits now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreditsState"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminSetIdentityLimits: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description null removes them; absent leaves them */
                    credits?: {
                        amount: number;
                        /** @enum {string} */
                        refill?: "daily" | "monthly";
                    } | null;
                    /** @description null removes them; absent leaves them */
                    limits?: {
                        name: string;
                        requests: number;
                        windowSeconds: number;
                    }[] | null;
                };
            };
        };
        responses: {
            /** @description The identity with its new limits */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Identity"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    offboardUser: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    owner: string;
                };
            };
        };
        responses: {
            /** @description The keys revoked */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OffboardResult"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    adminExportUsage: {
        parameters: {
            query?: {
                limit?: number;
                /** @description Where to go on from: the `next` of the last answer, or a time (events closed since then); absent, the oldest kept */
                since?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of usage events, oldest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        events: {
                            data: {
                                /** @description Calls admitted */
                                calls: number;
                                /** @description Credits the calls came to at their price */
                                credits: number;
                                identity?: string;
                                keyId: string;
                                /** @description The subject of the key’s owner */
                                owner: string;
                                /** @description Calls refused, by code */
                                refusals: {
                                    [key: string]: number;
                                };
                                /** @description Calls refused, all codes */
                                refused: number;
                                /** @description Rows of the inference batches admitted */
                                rows: number;
                                /** @description What the calls were to; absent for refusals decided before the target was known */
                                target?: {
                                    /** @enum {string} */
                                    kind: "model" | "workflow" | "platform" | "server";
                                    name?: string;
                                };
                                windowEnd: string;
                                windowStart: string;
                            };
                            /** @constant */
                            datacontenttype: "application/json";
                            /** @description The same at every delivery and read of this event: deduplicate by it (with source) */
                            id: string;
                            /** @description The installation (the usageExportSource setting) */
                            source: string;
                            /** @constant */
                            specversion: "1.0";
                            /** @description Whom it bills: the key’s identity when it has one, else the key id */
                            subject: string;
                            /** @description The minute’s start */
                            time: string;
                            /** @constant */
                            type: "dev.tollgate.usage.minute";
                        }[];
                        /** @description More events are there now: read again at once */
                        more: boolean;
                        /** @description Pass as since to read on; the same as since when nothing was new */
                        next: string;
                    };
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Gone: what the cursor pointed after is no longer kept; start again without it */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listApiKeys: {
        parameters: {
            query?: {
                cursor?: string;
                limit?: number;
                module?: "bda" | "platform";
                search?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of keys */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyPage"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    allowedCidrs?: string[];
                    credits?: {
                        amount: number;
                        /** @enum {string} */
                        refill?: "daily" | "monthly";
                    };
                    /** Format: date-time */
                    expiresAt?: string;
                    /** @description One of your identities: its limits and credits hold across all its keys */
                    identity?: string;
                    limits?: {
                        name: string;
                        requests: number;
                        windowSeconds: number;
                    }[];
                    models?: string[];
                    /** @enum {string} */
                    module: "bda" | "platform";
                    name?: string;
                    rateLimit?: {
                        requests: number;
                        windowSeconds: number;
                    };
                    roles: string[];
                };
            };
        };
        responses: {
            /** @description The new key */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedApiKey"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The key */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKey"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    rollApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    gracePeriodSeconds?: number;
                };
            };
        };
        responses: {
            /** @description The new key, and the old one as it now is */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RolledApiKey"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getApiKeyUsage: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The key’s usage */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyUsage"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listAuditEvents: {
        parameters: {
            query?: {
                action?: "key.created" | "key.rolled" | "key.deleted" | "key.expired" | "key.refused" | "key.limits_changed" | "key.leaked" | "key.credits_added" | "identity.created" | "identity.deleted" | "identity.limits_changed" | "identity.credits_added" | "webhook.created" | "webhook.deleted";
                cursor?: string;
                identity?: string;
                keyId?: string;
                limit?: number;
                since?: string;
                until?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuditPage"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listIdentities: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The identities, by name */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdentityList"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createIdentity: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    credits?: {
                        amount: number;
                        /** @enum {string} */
                        refill?: "daily" | "monthly";
                    };
                    displayName?: string;
                    limits?: {
                        name: string;
                        requests: number;
                        windowSeconds: number;
                    }[];
                    name: string;
                };
            };
        };
        responses: {
            /** @description The new identity */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Identity"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getIdentity: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The identity */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Identity"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteIdentity: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    reportLeakedKeys: {
        parameters: {
            query?: never;
            header: {
                /** @description Which of the service’s published keys signed the report */
                "Github-Public-Key-Identifier": string;
                /** @description Base64 ECDSA P-256 / SHA-256 signature (DER) of the raw body */
                "Github-Public-Key-Signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": ({
                    source?: string;
                    token: string;
                    type?: string;
                    url?: string;
                } & {
                    [key: string]: unknown;
                })[];
            };
        };
        responses: {
            /** @description Each token labelled true or false positive, by its hash */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        label: "true_positive" | "false_positive";
                        /** @description SHA-256 (hex) of the token: the token itself is never sent back */
                        token_hash: string;
                        token_type: string;
                    }[];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    whoami: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Caller"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listModels: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every Model */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ModelPage"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listModules: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The modules and their roles */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Modules"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWebhooks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoints */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            /**
                             * @description An administrator’s: every user’s key events
                             * @constant
                             */
                            allOwners?: true;
                            /** Format: date-time */
                            createdAt?: string;
                            description?: string;
                            events: ("key.created" | "key.rolled" | "key.revoked" | "key.offboarded" | "key.expiring" | "key.leaked" | "key.rate_limited" | "credits.low" | "credits.exhausted" | "usage.minute")[];
                            /** @description Days before a key’s expiry that key.expiring is sent (default 7) */
                            expiringDays?: number;
                            id: string;
                            owner: string;
                            url: string;
                        }[];
                    };
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description Administrators: the key events of every user
                     * @constant
                     */
                    allOwners?: true;
                    description?: string;
                    events: ("key.created" | "key.rolled" | "key.revoked" | "key.offboarded" | "key.expiring" | "key.leaked" | "key.rate_limited" | "credits.low" | "credits.exhausted" | "usage.minute")[];
                    expiringDays?: number;
                    /** Format: uri */
                    url: string;
                };
            };
        };
        responses: {
            /** @description The endpoint and its signing secret */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Removed */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                limit?: number;
                status?: "pending" | "delivered" | "failed";
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The deliveries */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            attempts: number;
                            /** Format: date-time */
                            createdAt: string;
                            /** @description The message id, sent as webhook-id on every attempt */
                            id: string;
                            /** Format: date-time */
                            lastAttemptAt?: string;
                            lastError?: string;
                            /** @description The receiver’s HTTP status on the last attempt */
                            lastStatus?: number;
                            /** Format: date-time */
                            nextAttemptAt?: string;
                            /** @enum {string} */
                            status: "pending" | "delivered" | "failed";
                            type: string;
                        }[];
                    };
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    replayWebhookDelivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                delivery: string;
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Queued again */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Delivery"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint and its new secret */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A conflict (`code` says which): the resource changed meanwhile, exists already or is in use, a per-user bound is reached, or a delivery is already queued */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    platformResource: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                resource: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The upstream’s answer */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The upstream failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The upstream did not answer in time */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    v2Live: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Live */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        live?: boolean;
                    };
                };
            };
        };
    };
    v2Ready: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        ready?: boolean;
                    };
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    v2ModelMetadata: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ModelMetadata"];
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The upstream failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The upstream did not answer in time */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    v2Infer: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    id?: string;
                    inputs: {
                        data: unknown;
                        /** @enum {unknown} */
                        datatype: "BOOL" | "UINT8" | "UINT16" | "UINT32" | "UINT64" | "INT8" | "INT16" | "INT32" | "INT64" | "FP16" | "FP32" | "FP64" | "BYTES";
                        name: string;
                        parameters?: Record<string, never>;
                        shape: number[];
                    }[];
                    outputs?: {
                        name: string;
                    }[];
                    parameters?: Record<string, never>;
                };
            };
        };
        responses: {
            /** @description The runtime’s answer */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
            /** @description The request is invalid: `field` names what to fix */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing, malformed, unknown or expired credentials */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The credentials do not allow this (admin routes: not an administrator) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found (another user’s key is not found either) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than the gateway accepts */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit is spent: the key’s, or on the management API the user’s pace (see Retry-After) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The upstream failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A store the gateway needs is unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The upstream did not answer in time */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
