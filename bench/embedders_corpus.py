"""The labelled retrieval set of ``bench/embedders.py``: wiki-like pages on distinct business topics and
queries labelled with the one page that answers them.

``paraphrase`` queries say what a page is about in other words: none of their content words (anything
outside ``STOPWORDS``) matches the page under the index's own tokenizer (porter over unicode61), which
``embedders.py`` checks before it measures anything. ``lexical`` queries reuse the page's own terms.
"""

from __future__ import annotations

# (key, title, body)
PAGES: list[tuple[str, str, str]] = [
    ("finance/customer-churn", "Customer churn",
     "Churn is the share of paying accounts at the start of a month that have no active subscription at the "
     "end of it. We count logo churn (accounts lost) separately from revenue churn (recurring revenue lost, "
     "including downgrades). An account is churned on the day its subscription lapses, not on the day it gives "
     "notice. Reactivations within 30 days are treated as if the account never left. Churn is reported monthly "
     "in the retention dashboard, broken down by plan, region and tenure cohort. Voluntary churn comes from "
     "accounts that give notice; involuntary churn comes from failed card payments that dunning could not "
     "recover."),
    ("finance/refund-policy", "Refund policy",
     "Orders can be refunded in full within 30 days of delivery if the item is unused and in its original "
     "packaging. After 30 days, and up to 90, we offer store credit instead of cash. Digital goods are "
     "refundable only if they were never downloaded. Refunds go to the original payment method; finance "
     "processes them in two to five business days. Partial refunds are allowed for damaged items after support "
     "reviews photos. Agents may approve refunds up to 200 euros; larger amounts need a team lead. Every "
     "refund is recorded in the refunds table with a reason code."),
    ("finance/revenue-recognition", "Revenue recognition",
     "We follow ASC 606: revenue is recognised when control of the goods or service passes to the customer, "
     "not when cash arrives. Annual subscriptions invoiced upfront are booked as deferred revenue and released "
     "evenly each month over the term. Professional services are recognised as the hours are delivered. Usage "
     "fees are recognised in the month the usage happens. Multi-element contracts allocate the price across "
     "performance obligations by standalone selling price. The deferred revenue balance is reconciled against "
     "the billing system at every month end close."),
    ("finance/fiscal-calendar", "Fiscal calendar",
     "Our fiscal year starts on 1 February and ends on 31 January, so FY2026 runs from February 2025 to "
     "January 2026. Quarters follow a 4-4-5 week pattern: the first two months of each quarter have four weeks "
     "and the third has five. Weeks start on Sunday. Every five or six years a 53rd week is added to the last "
     "quarter to realign with the calendar. Reports labelled Q1 always mean the fiscal quarter. Use the fiscal "
     "columns of dim_date instead of working out quarters by hand."),
    ("sales/customer-segments", "Customer segments",
     "Accounts are grouped into four segments by the headcount of the buying organisation: SMB (under 100 "
     "staff), mid-market (100 to 999), enterprise (1,000 to 9,999) and strategic (10,000 or more). The segment "
     "is assigned at first purchase from enrichment data and reviewed every January. Segment decides which "
     "sales team owns the account, the discount ceiling and the support tier. Public sector and education "
     "accounts form a separate vertical regardless of headcount. Use the segment column on dim_account, never "
     "the free-text field in the CRM."),
    ("ops/shipping-slas", "Shipping SLAs",
     "Standard parcels must leave the warehouse within two business days of the order being paid and arrive "
     "within five. Express orders placed before 2 pm ship the same day and arrive the next business day in the "
     "domestic zone. The carrier SLA clock stops on weekends and public holidays. A late shipment is one whose "
     "first carrier scan is after the promised dispatch date. Breaches are reported weekly per carrier and per "
     "fulfilment centre, and repeated breaches trigger a penalty clause in the carrier contract."),
    ("payments/chargebacks", "Chargebacks",
     "A chargeback happens when a cardholder asks their bank to reverse a payment. The payment processor "
     "debits the disputed amount plus a 15 euro fee immediately. We have seven days to submit evidence: proof "
     "of delivery, the signed terms and any correspondence. The payments team tracks win rate by reason code; "
     "fraud-coded disputes are almost never won, while 'item not received' disputes are won when tracking "
     "shows delivery. A chargeback ratio above 0.9% of transactions puts the merchant account at risk with the "
     "card schemes."),
    ("finance/sales-tax", "Sales tax and VAT",
     "VAT is charged at the rate of the buyer's country for consumers in the EU and at zero with reverse "
     "charge for VAT-registered businesses that give a valid VAT number. US sales tax is collected only in "
     "states where we have nexus, using the rate of the ship-to address. Tax amounts are stored separately "
     "from net amounts on every invoice line. Exemption certificates from non-profits are kept by the tax team "
     "and checked yearly. Filing happens monthly for Germany and quarterly everywhere else."),
    ("finance/currency-conversion", "Currency conversion",
     "All reporting is in euros. Transactions in other currencies are converted at the daily reference rate of "
     "the European Central Bank for the transaction date; weekends use the preceding Friday's rate. Budgets "
     "use a fixed plan rate set once a year, so variance reports show both actual-rate and plan-rate figures. "
     "The fx_rates table holds one row per currency and day. Never convert with the rate on the reporting "
     "date: historical figures would move every time the report runs."),
    ("finance/net-revenue-retention", "Net revenue retention",
     "Net revenue retention (NRR) compares the recurring revenue of a cohort of accounts today with the same "
     "cohort twelve months ago. Expansion (upsells, extra seats, price increases) raises it; contraction and "
     "churn lower it. New logos are excluded by construction. NRR above 100% means the existing base grows "
     "without any new business. Gross revenue retention is the same measure with expansion left out, so it can "
     "never exceed 100%. Both are reported at quarter end from the ARR snapshot table."),
    ("finance/mrr", "Monthly recurring revenue",
     "MRR is the normalised monthly value of all active subscriptions on the last day of the month. Annual "
     "plans count one twelfth of their contract value; one-off fees, setup charges and usage overages are "
     "excluded. The MRR movement report splits the change into new, expansion, contraction, churned and "
     "reactivated. Discounts reduce MRR for as long as they last. Free plans and internal test accounts are "
     "filtered out by the is_billable flag. ARR is simply MRR times twelve."),
    ("finance/customer-lifetime-value", "Customer lifetime value",
     "Lifetime value (LTV) estimates the gross profit an account brings over its whole relationship with us. "
     "We compute it as average monthly gross margin per account divided by monthly logo churn, per segment. "
     "The figure is capped at five years so that segments with tiny churn do not produce absurd values. LTV is "
     "compared with acquisition cost: an LTV to CAC ratio under 3 means a channel is not worth scaling. The "
     "model is refreshed every quarter by the finance analytics team."),
    ("marketing/customer-acquisition-cost", "Customer acquisition cost",
     "Customer acquisition cost (CAC) is total sales and marketing spend in a period divided by the number of "
     "new paying accounts won in that period. Spend includes salaries, commissions, advertising, events and "
     "tools; it excludes support and onboarding. We report blended CAC and paid CAC, which only counts "
     "accounts attributed to paid channels. The payback period is CAC divided by monthly gross margin of a new "
     "account; the target is under 18 months."),
    ("growth/trial-conversion", "Trial conversion",
     "Every new workspace starts a 14-day free trial of the Pro plan with no card required. Trial conversion "
     "rate is the share of trials that become paying within 30 days of the trial start. A trial counts as "
     "activated when the workspace invites a second user and creates three projects; activated trials convert "
     "about four times as often. Extensions of seven days are granted by sales on request. The conversion "
     "funnel is tracked in the growth dashboard per signup source."),
    ("sales/discount-approvals", "Discount approvals",
     "Sales reps may give up to 10% off list price without approval. Discounts between 10% and 25% need the "
     "regional sales manager, and anything above 25% needs the VP of Sales and finance. Multi-year deals may "
     "add 5% per extra year. Discounts are recorded on the quote in the CPQ tool and flow to the order form; a "
     "discount typed only in an email is not valid. Deal desk reviews every approved exception at month end."),
    ("sales/pricing-tiers", "Pricing tiers",
     "We sell three plans: Starter at 9 euros per user per month, Pro at 29 and Enterprise by quote. Starter "
     "has a limit of 10 users and community support. Pro adds single sign-on, audit logs and priority support. "
     "Enterprise adds a dedicated success manager, custom contracts and data residency. Annual billing gives "
     "two months free. Price changes are announced 60 days ahead and apply at the next renewal."),
    ("ops/inventory-reorder-points", "Inventory reorder points",
     "Each SKU has a reorder point: when stock on hand plus stock on order falls below it, the planning system "
     "raises a purchase proposal. The reorder point equals average daily demand times supplier lead time plus "
     "safety stock. Safety stock covers two standard deviations of demand over the lead time. A-class SKUs are "
     "reviewed weekly, B and C monthly. Stockouts are logged with the lost demand estimate so planners can "
     "tune the parameters."),
    ("ops/warehouse-returns", "Warehouse returns processing",
     "Returned items arrive at the returns dock with an RMA number printed on the label. Staff inspect each "
     "item within 48 hours and grade it A (resellable), B (refurbish) or C (scrap). Grade A goes back to "
     "sellable stock the same day. Items without an RMA are held for 14 days and then sent back to the sender. "
     "Inspection results are entered in the WMS, which triggers the refund for the order."),
    ("procurement/supplier-onboarding", "Supplier onboarding",
     "New suppliers fill in the vendor form with bank details, tax ID and insurance certificates. Procurement "
     "runs a sanctions screening and a credit check before the supplier is activated in the ERP. Suppliers "
     "handling personal data sign our data processing agreement. Bank detail changes are confirmed by phone "
     "with a known contact, never by email alone. Onboarding normally takes five business days."),
    ("procurement/purchase-order-approval", "Purchase order approval",
     "Any spend above 1,000 euros needs a purchase order raised in the ERP before the invoice arrives. POs up "
     "to 10,000 euros are approved by the budget owner; up to 50,000 by the department head; above that by the "
     "CFO. Invoices without a matching PO are put on hold by accounts payable. Three-way matching checks the "
     "PO, the goods receipt and the invoice before payment."),
    ("people/expense-reimbursement", "Expense reimbursement",
     "Employees submit expense claims in the expense app within 60 days, with a photo of each receipt. Meals "
     "are capped at 50 euros per person per day while travelling. Alcohol is not reimbursed unless a client is "
     "present. Claims are approved by the line manager and paid with the next payroll run. Mileage for private "
     "cars is paid at 0.30 euros per kilometre."),
    ("people/payroll-schedule", "Payroll schedule",
     "Salaries are paid on the 25th of each month, or the last working day before it when the 25th falls on a "
     "weekend or holiday. Changes to pay, bonuses and new hires must reach the payroll team by the 10th to "
     "make that month's run. Payslips are published in the HR portal two days before payment. Off-cycle "
     "payments are only made to fix errors made by the company."),
    ("people/headcount-planning", "Headcount planning",
     "Headcount is planned once a year with the budget and revisited each quarter. Each department receives a "
     "number of approved positions with a target start month. Opening a requisition requires an approved "
     "position; backfills for leavers are approved automatically if the role stays the same. The headcount "
     "report compares filled, open and planned positions per team. Contractors are tracked in the same report "
     "but do not consume approved positions."),
    ("people/employee-onboarding", "Employee onboarding",
     "New hires get their laptop and accounts on day one. The first week covers security training, a benefits "
     "session and meetings with their buddy and manager. Managers set 30-60-90 day goals in the HR portal. IT "
     "prepares access based on the role template; extra access goes through the normal request process. "
     "Onboarding surveys are sent after 30 and 90 days."),
    ("people/pto-policy", "Paid time off",
     "Full-time employees accrue 25 days of paid time off per year plus public holidays. Up to five unused "
     "days carry over to the next year and expire at the end of March. Requests of more than a week should be "
     "made a month ahead. Sick days are separate and do not reduce the PTO balance. Parental leave follows "
     "local law with a minimum of 16 weeks at full pay."),
    ("compliance/data-retention", "Data retention",
     "Personal data is kept only as long as needed. Application logs are deleted after 30 days, support "
     "transcripts after two years and invoices after ten years as tax law requires. Backups roll off after 35 "
     "days. The retention schedule lists every dataset, its owner and its retention period; a nightly job "
     "purges expired records. Legal holds suspend deletion for the affected records."),
    ("compliance/gdpr-deletion-requests", "GDPR deletion requests",
     "Under article 17 of the GDPR a person can ask us to erase their personal data. The privacy team verifies "
     "the identity of the requester, then runs the erasure workflow, which removes the person from the CRM, "
     "the product database, the marketing platform and analytics. Invoices are kept but pseudonymised. We must "
     "answer within one month. Each request and its outcome is logged for the regulator."),
    ("security/access-reviews", "Access reviews",
     "Every quarter, system owners review who has access to production systems, the data warehouse and finance "
     "tools. Reviewers confirm or revoke each grant in the access review tool. Grants not confirmed within two "
     "weeks are revoked automatically. Leavers lose access on their last day through the identity provider. "
     "Review evidence is kept for the SOC 2 audit. Admin roles are reviewed monthly instead of quarterly, by "
     "the security team itself."),
    ("engineering/incident-postmortems", "Incident postmortems",
     "Every SEV1 and SEV2 incident gets a blameless postmortem within five working days. The document covers "
     "the timeline, impact, root cause, what went well and action items with owners and due dates. Postmortems "
     "are reviewed in the weekly reliability meeting. Action items are tracked in the issue tracker with the "
     "postmortem label until closed. Incidents that repeat within a quarter are escalated to the engineering "
     "director."),
    ("engineering/on-call-rotation", "On-call rotation",
     "Each engineering team runs a weekly on-call rotation that changes hands on Monday at 10:00. The primary "
     "engineer must acknowledge a page within 15 minutes, day or night; the secondary is paged if they do not. "
     "On-call engineers receive a flat allowance per week plus compensation for pages outside working hours. "
     "Handover notes list open incidents and noisy alerts. Nobody is on call for more than one week in four."),
    ("engineering/uptime-sla", "Uptime SLA and service credits",
     "We promise 99.9% monthly uptime for the API and web app, excluding announced maintenance windows. "
     "Availability is measured by external probes every minute from three regions. If uptime falls below the "
     "commitment, enterprise contracts grant service credits: 10% of the monthly fee below 99.9%, 25% below "
     "99%. Credits must be claimed within 30 days and are applied to the next invoice."),
    ("support/ticket-priorities", "Support ticket priorities",
     "Tickets are triaged into four priorities. P1: production down for many users, first response within one "
     "hour around the clock. P2: a major feature broken, response within four business hours. P3: a minor "
     "problem or question, one business day. P4: feature requests and feedback, best effort. Enterprise "
     "contracts may shorten these targets. The priority is set by the agent, not by the requester."),
    ("support/csat-survey", "CSAT survey",
     "After a support ticket is solved the requester receives a one-question survey: how satisfied were you "
     "with the help you got, on a scale of 1 to 5. CSAT is the share of 4 and 5 answers among all answers. "
     "Comments on low scores are read by team leads weekly. Response rate is around 20%; surveys are not sent "
     "more than once a week to the same person."),
    ("product/nps", "Net promoter score",
     "NPS asks users how likely they are to recommend the product to a friend or colleague, from 0 to 10. "
     "Promoters answer 9 or 10, passives 7 or 8, detractors 0 to 6. The score is the percentage of promoters "
     "minus the percentage of detractors, from -100 to 100. The in-app survey runs twice a year on a random "
     "sample of active users; follow-up interviews go to detractors."),
    ("marketing/attribution", "Marketing attribution",
     "We attribute pipeline and revenue to marketing channels with a W-shaped model: 30% of credit to the "
     "first touch, 30% to the lead creation touch, 30% to the opportunity creation touch and 10% spread over "
     "the touches in between. Touches come from UTM parameters, form fills and event scans. Self-reported "
     "answers from the signup form ('how did you hear about us') are reported beside the model, not blended "
     "into it."),
    ("marketing/email-unsubscribes", "Email unsubscribes",
     "Every marketing email carries a one-click unsubscribe link. Unsubscribes are processed immediately and "
     "synced to the CRM within an hour. Transactional emails such as receipts and password resets are not "
     "affected. A campaign whose unsubscribe rate exceeds 0.5% is reviewed by the lifecycle team. Bounced "
     "addresses are suppressed after two hard bounces. Preference centre settings let subscribers keep product "
     "news while dropping promotional mailings."),
    ("marketing/lead-scoring", "Lead scoring",
     "Leads receive a score from 0 to 100 combining fit (segment, industry, job title) and engagement (pricing "
     "page visits, webinar attendance, email clicks). A lead at 60 or more becomes a marketing qualified lead "
     "and is routed to a sales development rep. Scores decay by 10 points for every month without engagement. "
     "The model is recalibrated each half year against closed-won deals."),
    ("sales/pipeline-stages", "Sales pipeline stages",
     "Opportunities move through six stages: discovery, qualification, demo, proposal, negotiation and closed "
     "(won or lost). Each stage has a default probability used in the forecast: 10, 20, 40, 60, 80 and 100 or "
     "0. An opportunity cannot skip qualification. Deals with no activity for 30 days are flagged as stale in "
     "the weekly pipeline review. Lost deals must carry a loss reason picked from the standard list in the "
     "CRM."),
    ("sales/quota-and-commissions", "Quotas and commissions",
     "Account executives carry an annual quota set on new ARR. Commission is 10% of booked first-year ARR up "
     "to quota and 15% above it. Commissions are paid monthly, one month after the deal is booked, and clawed "
     "back if the account churns within 90 days. Quota relief is granted for territory changes and approved "
     "leave. Accelerators above 150% of quota are capped and need approval from the CRO."),
    ("sales/contract-renewals", "Contract renewals",
     "Subscriptions renew automatically for the same term unless notice is given 30 days before the end date. "
     "Customer success opens a renewal opportunity 120 days before the end date. Renewal price increases are "
     "capped at 7% per year in enterprise contracts. The renewal rate is renewed contract value divided by "
     "contract value up for renewal in the period. Downgrades at renewal are recorded as contraction, not as "
     "churn."),
    ("finance/ar-aging", "Accounts receivable aging",
     "The aging report groups unpaid invoices by days past due: current, 1-30, 31-60, 61-90 and over 90. "
     "Collections sends reminders at 7, 21 and 45 days past due, and accounts over 60 days are suspended after "
     "a final notice. DSO (days sales outstanding) is receivables divided by revenue times the days in the "
     "period. The aging snapshot is taken on the last day of every month."),
    ("finance/bad-debt", "Bad debt write-offs",
     "Invoices more than 180 days past due, or owed by a company in insolvency, are written off as bad debt. A "
     "write-off needs the controller's approval above 5,000 euros. We book a provision every month equal to 2% "
     "of receivables plus 50% of balances over 90 days past due. Recoveries after a write-off are booked as "
     "other income. Collections agencies are engaged for balances above 1,000 euros before any write-off."),
    ("finance/budget-variance", "Budget variance",
     "Each month finance compares actual spend and revenue with the budget per cost centre. A variance over "
     "10% and over 20,000 euros must be explained by the budget owner in the variance commentary. Favourable "
     "and unfavourable variances are both explained. The forecast is updated quarterly; the budget itself is "
     "never changed after approval. Variance commentary is due by the seventh working day after month end."),
    ("finance/cash-flow-forecast", "Cash flow forecast",
     "Treasury maintains a 13-week rolling cash forecast updated every Monday. Inflows come from expected "
     "customer payments based on invoice due dates and historical payment behaviour; outflows from payroll, "
     "supplier runs, rent and tax. The minimum cash buffer is three months of operating expenses. A projected "
     "breach of the buffer is escalated to the CFO. Forecast accuracy is tracked by comparing each week's "
     "projection with actual receipts."),
    ("finance/gross-margin", "Gross margin",
     "Gross margin is revenue minus cost of revenue, divided by revenue. Cost of revenue includes hosting, "
     "third-party licences embedded in the product, payment processing fees and the support and onboarding "
     "teams. It excludes research and development, sales and marketing. Target gross margin for subscription "
     "revenue is 80%; services run near break-even. Margin is reported per product line and per hosting region "
     "every quarter."),
    ("engineering/cloud-cost-allocation", "Cloud cost allocation",
     "Cloud bills are allocated to teams through resource tags: team, service and environment. Untagged "
     "resources are charged to the platform team and listed in a weekly report. Shared costs such as "
     "networking and the Kubernetes control plane are split by CPU hours. Each team sees its monthly spend in "
     "the FinOps dashboard against its budget. Reserved instances and savings plans are bought centrally and "
     "their discount is shared pro rata."),
    ("risk/fraud-detection", "Fraud detection",
     "Every order is scored by the fraud engine before payment capture. Signals include mismatched billing and "
     "shipping countries, new accounts placing large orders, many cards tried on one account and known bad "
     "devices. Orders above the high-risk threshold are blocked; medium scores go to manual review within four "
     "hours. False positives are tagged so the model can be retrained. Confirmed fraud losses are reported "
     "monthly as a share of gross merchandise value."),
    ("marketing/loyalty-program", "Loyalty program",
     "Members earn one point per euro spent and 100 bonus points on their birthday. Points convert to vouchers "
     "at 500 points for 5 euros. Points expire 24 months after they were earned. Gold tier starts at 2,000 "
     "points a year and gives free express shipping. Points are not earned on gift card purchases or shipping "
     "fees. Members can see their balance and tier progress in the app and on receipts."),
    ("payments/gift-cards", "Gift cards",
     "Gift cards are sold in values from 10 to 500 euros and are valid for three years. Sold gift cards are a "
     "liability until redeemed; breakage (the value expected never to be redeemed) is recognised as revenue in "
     "proportion to redemptions. Gift cards cannot be exchanged for cash or used to buy other gift cards. Lost "
     "cards are replaced only with proof of purchase."),
    ("quality/product-recalls", "Product recalls",
     "When a safety defect is found, the quality team opens a recall case, notifies the regulator within 48 "
     "hours and stops sales of the affected batches. Affected buyers are contacted by email and letter using "
     "the batch numbers on their orders. Recalled units are collected free of charge and replaced or refunded. "
     "The recall register lists batches, unit counts and the share of units recovered."),
    ("quality/warranty-claims", "Warranty claims",
     "Products carry a two-year warranty against manufacturing defects. A claim needs the order number, a "
     "description and photos or a video of the fault. Approved claims are repaired, replaced or credited, in "
     "that order of preference. Damage from misuse or accidents is not covered. The claims rate per product "
     "line is reviewed monthly with suppliers. Costs of approved claims are charged back to the supplier when "
     "the defect is theirs."),
    ("retail/store-footfall", "Store footfall",
     "People counters at each store entrance count visitors per hour. Conversion in stores is the number of "
     "receipts divided by visitors. Footfall is compared with the same weekday last year to remove weekday "
     "effects. Counters are recalibrated twice a year; days with counter outages are flagged and excluded from "
     "trends. Regional managers get a weekly footfall summary with the ten weakest stores highlighted."),
    ("ops/address-validation", "Delivery address validation",
     "At checkout the address is checked against the postal reference data of the destination country. Unknown "
     "streets or postcodes that do not match the town trigger a suggestion the buyer can accept or override. "
     "Orders with overridden addresses are flagged for the warehouse. Undeliverable parcels returned by the "
     "carrier cost us about 12 euros each. Address data is updated monthly from the national postal operators."),
    ("payments/dunning", "Dunning for failed payments",
     "When a subscription payment fails, the dunning process retries the card after 1, 3, 5 and 7 days and "
     "emails the billing contact before each retry. Card updater services refresh expired card numbers "
     "automatically. After the last failed retry the account is downgraded to the free plan and counted as "
     "involuntary churn. About 60% of failed payments are recovered. Enterprise accounts paying by invoice are "
     "handled by collections instead."),
    ("partners/referral-program", "Partner referral program",
     "Registered partners earn 20% of the first-year subscription value of every referred account that pays "
     "within 90 days of the referral. Referrals are registered through the partner portal before the first "
     "sales call; a referral for an account already in an open opportunity is rejected. Payouts happen "
     "quarterly in arrears. Partners are ranked in silver and gold levels by the number of referred accounts "
     "each year."),
    ("data/pipeline-freshness", "Data pipeline freshness",
     "The nightly ELT loads source systems into the warehouse by 05:00 UTC; dbt models finish by 06:30. Each "
     "model has a freshness check: if the newest loaded row is older than its threshold, the check fails and "
     "the data team is paged. Dashboards show a banner when the data behind them is stale. Late loads are "
     "reported in the data incident channel."),
    ("product/active-users", "Active user definitions",
     "A daily active user (DAU) is a person who performed at least one meaningful action in the product that "
     "day; opening a page or receiving an email does not count. MAU counts distinct users active in the last "
     "28 days. The DAU/MAU ratio measures stickiness. Internal staff accounts and API-only service users are "
     "excluded from all active user metrics. Weekly active users are reported separately for mobile."),
    ("product/ab-testing", "A/B testing guidelines",
     "Every experiment needs a hypothesis, a primary metric and a minimum detectable effect written down "
     "before launch. Sample size is computed up front and the test runs for at least two full weeks. Peeking "
     "at significance and stopping early is not allowed. Results are reported with confidence intervals; a "
     "variant ships only if the primary metric improves and guardrail metrics do not degrade."),
    ("people/travel-policy", "Travel policy",
     "Business trips are booked through the travel portal. Economy class is required for flights under six "
     "hours; premium economy is allowed for longer flights. Hotels must stay within the city rate cap listed "
     "in the portal. Trips abroad need manager approval two weeks in advance and a travel risk check for "
     "high-risk destinations. Rail is preferred over flying for journeys under four hours."),
    ("finance/month-end-close", "Month-end close",
     "The books close on the fifth working day of each month. Day one: cut-off of invoices and accruals. Day "
     "two: bank reconciliations and intercompany. Day three: revenue and deferred revenue review. Day four: "
     "management accounts and flux analysis. Day five: sign-off by the controller. Journal entries after "
     "sign-off need the CFO. A close checklist with owners for each task is kept in the finance wiki."),
    ("sales/territories", "Sales territories",
     "Territories are assigned by country for SMB and mid-market, and by named account list for enterprise. A "
     "territory is rebalanced once a year so that each rep has a similar total addressable market. Accounts "
     "move between reps only at the start of a quarter. Disputes over ownership are settled by sales "
     "operations using the account creation date in the CRM."),
    ("support/knowledge-base", "Knowledge base articles",
     "Help centre articles are written by support agents and reviewed by a knowledge manager before they are "
     "published. Each article has an owner and a review date six months out. Articles linked from many solved "
     "tickets are prioritised for updates. Outdated articles are archived rather than deleted so that old "
     "links still resolve. Search terms that return no article are reviewed monthly to find gaps."),
    ("legal/contract-signature", "Contract signature authority",
     "Only officers listed in the signature matrix may sign contracts on behalf of the company. Sales "
     "agreements up to 250,000 euros per year may be signed by the VP of Sales; larger ones by the CEO or CFO. "
     "Every contract goes through legal review and is signed electronically; the signed copy is stored in the "
     "contract repository. Wet-ink signatures are accepted only where local law demands them."),
]

# (query, page key): paraphrases share no content word with their page
PARAPHRASE: list[tuple[str, str]] = [
    ("clients who cancelled", "finance/customer-churn"),
    ("how many buyers quit using us", "finance/customer-churn"),
    ("can a shopper get money back for a purchase", "finance/refund-policy"),
    ("reimbursing someone who did not like what they bought", "finance/refund-policy"),
    ("when can income from a yearly plan paid in advance be counted as earned", "finance/revenue-recognition"),
    ("when is sales income accounted for", "finance/revenue-recognition"),
    ("how our accounting periods are laid out", "finance/fiscal-calendar"),
    ("when does our financial cycle begin", "finance/fiscal-calendar"),
    ("how are small and large firms classified", "sales/customer-segments"),
    ("bucketing companies by employee numbers", "sales/customer-segments"),
    ("how quickly must packages reach people who bought online", "ops/shipping-slas"),
    ("guaranteed delivery times for couriers", "ops/shipping-slas"),
    ("buyer contested what they spent with the issuer", "payments/chargebacks"),
    ("shopper's issuer clawed back money", "payments/chargebacks"),
    ("levies added to bills for shoppers in Europe", "finance/sales-tax"),
    ("how we handle foreign money and exchange", "finance/currency-conversion"),
    ("translating dollar amounts into our home money", "finance/currency-conversion"),
    ("are current clients spending more annually", "finance/net-revenue-retention"),
    ("growth from current clients minus their losses", "finance/net-revenue-retention"),
    ("predictable income every four weeks from subscribers", "finance/mrr"),
    ("total earnings one client generates before leaving", "finance/customer-lifetime-value"),
    ("expected earnings from a buyer until they leave", "finance/customer-lifetime-value"),
    ("budget needed to land a fresh client", "marketing/customer-acquisition-cost"),
    ("how expensive is it to sign a buyer", "marketing/customer-acquisition-cost"),
    ("how many evaluators turn into subscribers", "growth/trial-conversion"),
    ("fraction of people testing at zero charge who then buy", "growth/trial-conversion"),
    ("who signs off on a markdown for a prospect", "sales/discount-approvals"),
    ("permission to lower what a prospect pays", "sales/discount-approvals"),
    ("what does each package cost", "sales/pricing-tiers"),
    ("cheapest option versus the premium one", "sales/pricing-tiers"),
    ("when to buy more goods from vendors", "ops/inventory-reorder-points"),
    ("avoid running out of products in storage", "ops/inventory-reorder-points"),
    ("handling merchandise buyers no longer want", "ops/warehouse-returns"),
    ("sorting merchandise buyers did not keep", "ops/warehouse-returns"),
    ("adding a fresh provider to our books", "procurement/supplier-onboarding"),
    ("vetting before we begin purchasing from a provider", "procurement/supplier-onboarding"),
    ("who must sign off before I buy something expensive", "procurement/purchase-order-approval"),
    ("getting refunded for lunch on a business trip", "people/expense-reimbursement"),
    ("recovering costs I covered myself", "people/expense-reimbursement"),
    ("what date do wages arrive", "people/payroll-schedule"),
    ("when do workers receive their compensation", "people/payroll-schedule"),
    ("how many hires each group may recruit", "people/headcount-planning"),
    ("what recent joiners do at the start", "people/employee-onboarding"),
    ("how much vacation do I get", "people/pto-policy"),
    ("vacation allowance and leftover entitlement", "people/pto-policy"),
    ("when do we throw away stored information", "compliance/data-retention"),
    ("someone wants us to forget everything about them", "compliance/gdpr-deletion-requests"),
    ("right to be forgotten", "compliance/gdpr-deletion-requests"),
    ("periodic check of who can log into what", "security/access-reviews"),
    ("write-up after an outage", "engineering/incident-postmortems"),
    ("learning from production failures without blame", "engineering/incident-postmortems"),
    ("who gets woken up when things break after dark", "engineering/on-call-rotation"),
    ("money off the bill when the platform is down too long", "engineering/uptime-sla"),
    ("how fast must the helpdesk answer an urgent issue", "support/ticket-priorities"),
    ("how happy are people with the helpdesk", "support/csat-survey"),
    ("would people advise peers to choose us", "product/nps"),
    ("which campaigns deserve recognition for closed business", "marketing/attribution"),
    ("people opting out of newsletters", "marketing/email-unsubscribes"),
    ("ranking prospects by how likely they are to buy", "marketing/lead-scoring"),
    ("steps from first call to signature", "sales/pipeline-stages"),
    ("how reps earn variable pay", "sales/quota-and-commissions"),
    ("targets and bonuses for sellers", "sales/quota-and-commissions"),
    ("extending agreements when they expire", "sales/contract-renewals"),
    ("overdue bills sorted by lateness", "finance/ar-aging"),
    ("money clients will never pay us", "finance/bad-debt"),
    ("why did we overspend against plan", "finance/budget-variance"),
    ("predicting our bank balance in the near future", "finance/cash-flow-forecast"),
    ("profitability after direct expenses", "finance/gross-margin"),
    ("which group pays for which servers", "engineering/cloud-cost-allocation"),
    ("spotting criminals buying with stolen credentials", "risk/fraud-detection"),
    ("rewarding repeat shoppers", "marketing/loyalty-program"),
    ("prepaid vouchers people give as presents", "payments/gift-cards"),
    ("pulling dangerous items off the market", "quality/product-recalls"),
    ("broken item still under guarantee", "quality/warranty-claims"),
    ("how many shoppers walk into our shops", "retail/store-footfall"),
    ("verifying where a package should go", "ops/address-validation"),
    ("trying again when a subscriber's charge is declined", "payments/dunning"),
    ("rewards for resellers who bring us new business", "partners/referral-program"),
    ("is yesterday's import overdue", "data/pipeline-freshness"),
    ("tallying how many people engage with the app", "product/active-users"),
    ("rules for comparing alternate versions of a feature", "product/ab-testing"),
    ("reserving planes and lodging for work", "people/travel-policy"),
    ("steps to finalise the ledger each period", "finance/month-end-close"),
    ("which seller owns which region", "sales/territories"),
    ("keeping self-service documentation current", "support/knowledge-base"),
    ("who can lawfully commit the firm to deals", "legal/contract-signature"),
]

# (query, page key): lexical queries reuse the page's own terms
LEXICAL: list[tuple[str, str]] = [
    ("logo churn and revenue churn", "finance/customer-churn"),
    ("refund store credit after 30 days", "finance/refund-policy"),
    ("deferred revenue released each month", "finance/revenue-recognition"),
    ("fiscal quarter 4-4-5 weeks", "finance/fiscal-calendar"),
    ("53rd week fiscal year", "finance/fiscal-calendar"),
    ("segment SMB mid-market enterprise", "sales/customer-segments"),
    ("carrier SLA breach late shipment", "ops/shipping-slas"),
    ("chargeback evidence reason code", "payments/chargebacks"),
    ("VAT reverse charge", "finance/sales-tax"),
    ("European Central Bank reference rate fx_rates", "finance/currency-conversion"),
    ("net revenue retention NRR", "finance/net-revenue-retention"),
    ("MRR movement report", "finance/mrr"),
    ("LTV to CAC ratio", "finance/customer-lifetime-value"),
    ("CAC payback period", "marketing/customer-acquisition-cost"),
    ("trial conversion rate activated", "growth/trial-conversion"),
    ("discount approval VP of Sales", "sales/discount-approvals"),
    ("Starter Pro Enterprise plan price", "sales/pricing-tiers"),
    ("reorder point safety stock", "ops/inventory-reorder-points"),
    ("RMA returns dock inspection", "ops/warehouse-returns"),
    ("supplier sanctions screening", "procurement/supplier-onboarding"),
    ("purchase order three-way matching", "procurement/purchase-order-approval"),
    ("expense claims receipt mileage", "people/expense-reimbursement"),
    ("payroll run payslips", "people/payroll-schedule"),
    ("headcount positions requisition", "people/headcount-planning"),
    ("paid time off carry over", "people/pto-policy"),
    ("retention schedule purge backups", "compliance/data-retention"),
    ("GDPR erasure article 17", "compliance/gdpr-deletion-requests"),
    ("access review revoke grants", "security/access-reviews"),
    ("blameless postmortem action items", "engineering/incident-postmortems"),
    ("on-call page acknowledge", "engineering/on-call-rotation"),
    ("service credits uptime", "engineering/uptime-sla"),
    ("P1 ticket first response", "support/ticket-priorities"),
    ("CSAT survey score", "support/csat-survey"),
    ("NPS promoters detractors", "product/nps"),
    ("W-shaped attribution touches", "marketing/attribution"),
    ("unsubscribe link hard bounces", "marketing/email-unsubscribes"),
    ("marketing qualified lead score", "marketing/lead-scoring"),
    ("aging report days past due", "finance/ar-aging"),
    ("dunning retries failed payments", "payments/dunning"),
    ("gift card breakage", "payments/gift-cards"),
    ("DAU MAU stickiness", "product/active-users"),
    ("month-end close reconciliations", "finance/month-end-close"),
]

# Function words and question padding; every other word of a paraphrase counts as a content word.
STOPWORDS = frozenset("""
a about after all an and any are as at be before by can do does each every for from get gets how i if in into
is it its last many more most much must next of off on one or our out per should so some than that the their
them then there these they things this those through to too under up us we what when where which who whom why
will with would you your am was were been being has have had did also just only own same very here now
""".split())

# Queries no page answers: any hit the vector lane alone contributes for these is noise.
OFFTOPIC: list[str] = [
    "recipe for banana bread",
    "how to tune a guitar",
    "best hiking trails in the alps",
    "why is the sky blue",
    "train a puppy to sit",
    "symptoms of the common cold",
    "rules of chess castling",
    "how do volcanoes form",
    "knitting a scarf for beginners",
    "history of the roman empire",
    "watering schedule for tomato plants",
    "what is a black hole",
    "learn to juggle three balls",
    "origami crane folding steps",
    "translate good morning into japanese",
]

# Workplace questions close to the pages' domain that no page answers: the harder test of the floor.
UNANSWERED: list[str] = [
    "where can I park at the office",
    "the coffee machine on floor three is broken",
    "dress code for visitors",
    "how do I reserve a meeting room",
    "office wifi password",
    "date of the summer party",
    "who waters the office plants",
    "ordering business cards",
    "moving to a different desk",
    "printer is out of toner",
    "can I bring my dog to work",
    "kitchen recycling bins",
]
