"""Hand-written SQL for the compiler tests: the right answers, and the naive joins that double count.

The "right" queries are written differently from what the compiler emits (EXISTS semi-joins
instead of distinct bridges, FULL JOINs instead of a dimension spine), so agreement means
something.
"""

from __future__ import annotations

ORDERS_BY_STATUS = "SELECT status, SUM(amount), COUNT(*) FROM orders GROUP BY status"

QUANTITY_BY_CATEGORY = """
SELECT c.name, SUM(i.quantity) FROM order_items i
JOIN products p ON p.id = i.product_id JOIN categories c ON c.id = p.category_id GROUP BY c.name
"""

# Each order counts once in every category it has an item of; orders without items fall under NULL.
REVENUE_BY_CATEGORY = """
SELECT c.name, SUM(o.amount) FROM orders o CROSS JOIN categories c
WHERE EXISTS (SELECT 1 FROM order_items i JOIN products p ON p.id = i.product_id
              WHERE i.order_id = o.id AND p.category_id = c.id)
GROUP BY c.name
UNION ALL
SELECT NULL, SUM(o.amount) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)
"""

REVENUE_BY_CATEGORY_NAIVE = """
SELECT c.name, SUM(o.amount) FROM orders o LEFT JOIN order_items i ON i.order_id = o.id
LEFT JOIN products p ON p.id = i.product_id LEFT JOIN categories c ON c.id = p.category_id GROUP BY c.name
"""

_ORDER_AGGREGATES = "SUM(o.amount), AVG(o.amount), COUNT(*), MAX(o.amount), MIN(o.amount), SUM(o.amount) / COUNT(*)"
ORDER_MEASURES_BY_CATEGORY_AND_SEGMENT = f"""
SELECT c.name, cu.segment, {_ORDER_AGGREGATES}
FROM orders o LEFT JOIN customers cu ON cu.id = o.customer_id CROSS JOIN categories c
WHERE EXISTS (SELECT 1 FROM order_items i JOIN products p ON p.id = i.product_id
              WHERE i.order_id = o.id AND p.category_id = c.id)
GROUP BY c.name, cu.segment
UNION ALL
SELECT NULL, cu.segment, {_ORDER_AGGREGATES}
FROM orders o LEFT JOIN customers cu ON cu.id = o.customer_id
WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)
GROUP BY cu.segment
"""

REVENUE_AND_REFUNDS_BY_SEGMENT = """
SELECT COALESCE(a.segment, b.segment), a.revenue, b.refunds
FROM (SELECT cu.segment, SUM(o.amount) AS revenue FROM orders o LEFT JOIN customers cu ON cu.id = o.customer_id
      GROUP BY cu.segment) a
FULL JOIN (SELECT cu.segment, SUM(r.amount) AS refunds FROM returns r LEFT JOIN customers cu ON cu.id = r.customer_id
           GROUP BY cu.segment) b ON a.segment = b.segment
"""

REVENUE_AND_REFUNDS_BY_SEGMENT_NAIVE = """
SELECT cu.segment, SUM(o.amount), SUM(r.amount) FROM orders o LEFT JOIN customers cu ON cu.id = o.customer_id
LEFT JOIN returns r ON r.customer_id = cu.id GROUP BY cu.segment
"""

DERIVED_BY_SEGMENT = """
SELECT cu.segment, SUM(o.amount) / COUNT(*),
       SUM(CASE WHEN o.status = 'delivered' THEN o.amount END) / SUM(o.amount), 2 * SUM(o.amount) / COUNT(*)
FROM orders o LEFT JOIN customers cu ON cu.id = o.customer_id GROUP BY cu.segment
"""

ITEM_VALUE_BY_CATEGORY = """
SELECT c.name, SUM(i.quantity * i.unit_price) FROM order_items i
JOIN products p ON p.id = i.product_id JOIN categories c ON c.id = p.category_id GROUP BY c.name
"""

BIG_ORDERS_BY_STATUS = "SELECT status, COUNT(*) FILTER (WHERE amount >= 500) FROM orders GROUP BY status"

FILTERED_REVENUE_BY_SEGMENT = """
SELECT cu.segment, SUM(o.amount) FROM orders o LEFT JOIN customers cu ON cu.id = o.customer_id
WHERE o.status = 'delivered' AND cu.segment IN ('enterprise', 'smb') AND o.created_at >= TIMESTAMP '2025-07-01'
  AND o.amount >= 500
GROUP BY cu.segment
"""

REVENUE_BY_MONTH = "SELECT DATE_TRUNC('month', created_at), SUM(amount) FROM orders GROUP BY 1"

DELIVERED_QUANTITY_BY_ORDER_STORE = """
SELECT s.name, SUM(i.quantity) FROM order_items i JOIN orders o ON o.id = i.order_id JOIN stores s ON s.id = o.store_id
WHERE o.status = 'delivered' GROUP BY s.name
"""

UNIQUE_CUSTOMERS_BY_SEGMENT = """
SELECT cu.segment, COUNT(DISTINCT o.customer_id) FROM orders o LEFT JOIN customers cu ON cu.id = o.customer_id
GROUP BY cu.segment
"""

REVENUE_AND_QUANTITY_BY_CATEGORY = """
SELECT COALESCE(a.name, b.name), a.revenue, b.quantity
FROM (SELECT c.name, SUM(o.amount) AS revenue FROM orders o CROSS JOIN categories c
      WHERE EXISTS (SELECT 1 FROM order_items i JOIN products p ON p.id = i.product_id
                    WHERE i.order_id = o.id AND p.category_id = c.id)
      GROUP BY c.name
      UNION ALL
      SELECT NULL, SUM(o.amount) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)
     ) a
FULL JOIN (SELECT c.name, SUM(i.quantity) AS quantity FROM order_items i JOIN products p ON p.id = i.product_id
           JOIN categories c ON c.id = p.category_id GROUP BY c.name) b ON a.name = b.name
"""

# Two crossings: each order counts once per distinct (category of its items, reason of its customer's returns).
REVENUE_BY_CATEGORY_AND_RETURN_REASON = """
WITH cats AS (
  SELECT o.id, c.name FROM orders o CROSS JOIN categories c
  WHERE EXISTS (SELECT 1 FROM order_items i JOIN products p ON p.id = i.product_id
                WHERE i.order_id = o.id AND p.category_id = c.id)
  UNION ALL SELECT o.id, NULL FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)
), reasons AS (
  SELECT o.id, r.reason FROM orders o CROSS JOIN (SELECT DISTINCT reason FROM returns) r
  WHERE EXISTS (SELECT 1 FROM returns x WHERE x.customer_id = o.customer_id AND x.reason = r.reason)
  UNION ALL
  SELECT o.id, NULL FROM orders o WHERE NOT EXISTS (SELECT 1 FROM returns x WHERE x.customer_id = o.customer_id)
)
SELECT cats.name, reasons.reason, SUM(o.amount)
FROM orders o JOIN cats ON cats.id = o.id JOIN reasons ON reasons.id = o.id
GROUP BY cats.name, reasons.reason
"""

BIG_ORDER_COUNT_BY_SEGMENT = """
SELECT cu.segment, COUNT(*) FROM orders o LEFT JOIN customers cu ON cu.id = o.customer_id WHERE o.amount >= 500
GROUP BY cu.segment
"""
