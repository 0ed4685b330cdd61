SELECT
  DATE_TRUNC('MONTH', orders.created_at) AS created_at,
  SUM(orders.amount) / COUNT(*) AS aov,
  COUNT(CASE WHEN orders.amount >= 500 THEN 1 END) AS big_orders
FROM orders
LEFT JOIN customers
  ON orders.customer_id = customers.id
WHERE
  orders.status <> 'refunded' AND customers.segment IN ('enterprise', 'smb')
GROUP BY
  DATE_TRUNC('MONTH', orders.created_at)
