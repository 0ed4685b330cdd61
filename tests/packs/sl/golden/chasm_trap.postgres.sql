WITH orders__agg AS (
  SELECT
    customers.segment AS segment,
    SUM(orders.amount) AS revenue
  FROM orders
  LEFT JOIN customers
    ON orders.customer_id = customers.id
  GROUP BY
    customers.segment
), returns__agg AS (
  SELECT
    customers.segment AS segment,
    SUM(returns.amount) AS refund_total
  FROM returns
  LEFT JOIN customers
    ON returns.customer_id = customers.id
  GROUP BY
    customers.segment
), __spine AS (
  SELECT
    segment
  FROM orders__agg
  UNION
  SELECT
    segment
  FROM returns__agg
)
SELECT
  __spine.segment AS segment,
  orders__agg.revenue AS revenue,
  returns__agg.refund_total AS refund_total
FROM __spine
LEFT JOIN orders__agg
  ON __spine.segment IS NOT DISTINCT FROM orders__agg.segment
LEFT JOIN returns__agg
  ON __spine.segment IS NOT DISTINCT FROM returns__agg.segment
ORDER BY
  revenue DESC NULLS LAST
LIMIT 10
