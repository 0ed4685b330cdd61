WITH orders__pre AS (
  SELECT
    customers.segment AS segment,
    orders.id AS __k0_0,
    SUM(orders.amount) AS __revenue_sum,
    SUM(orders.amount) AS __avg_amount_sum,
    COUNT(orders.amount) AS __avg_amount_count
  FROM orders
  LEFT JOIN customers
    ON orders.customer_id = customers.id
  GROUP BY
    customers.segment,
    orders.id
), orders__bridge_order_items AS (
  SELECT DISTINCT
    order_items.order_id AS __k0_0,
    categories.name AS name
  FROM order_items
  LEFT JOIN products
    ON order_items.product_id = products.id
  LEFT JOIN categories
    ON products.category_id = categories.id
)
SELECT
  orders__bridge_order_items.name AS name,
  orders__pre.segment AS segment,
  SUM(orders__pre.__revenue_sum) AS revenue,
  CAST(SUM(orders__pre.__avg_amount_sum) AS DOUBLE PRECISION) / NULLIF(SUM(orders__pre.__avg_amount_count), 0) AS avg_amount
FROM orders__pre
LEFT JOIN orders__bridge_order_items
  ON orders__pre.__k0_0 = orders__bridge_order_items.__k0_0
GROUP BY
  orders__bridge_order_items.name,
  orders__pre.segment
