// Jest setup provided by Grafana scaffolding
import './.config/jest-setup';

// jsdom has no ResizeObserver; @grafana/ui's tooltip container observes its size.
class ResizeObserverStub {
  observe() {}
  unobserve() {}
  disconnect() {}
}
global.ResizeObserver = global.ResizeObserver || ResizeObserverStub;
