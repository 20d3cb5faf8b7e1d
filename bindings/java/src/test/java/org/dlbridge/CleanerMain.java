package org.dlbridge;

/**
 * Reports how the library's cleaner thread lives: its group, daemon flag, class loader, and
 * whether an interrupt ends it. Run in a JVM of its own (JarTest): the interrupt stops cleanup.
 */
public final class CleanerMain {
  private CleanerMain() {}

  public static void main(String[] args) throws InterruptedException {
    try (Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, 2)) {
      t.copyFrom(new float[] {1, 2});
    }
    Thread cleaner = null;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().equals("dlbridge-cleaner")) {
        cleaner = t;
      }
    }
    if (cleaner == null) {
      System.out.println("no cleaner thread");
      return;
    }
    ThreadGroup group = cleaner.getThreadGroup();
    System.out.println("daemon=" + cleaner.isDaemon() + " root-group=" + (group.getParent() == null)
        + " same-group-as-main=" + (group == Thread.currentThread().getThreadGroup())
        + " loader=" + cleaner.getContextClassLoader());
    cleaner.interrupt();
    cleaner.join(5000);
    System.out.println("ended-on-interrupt=" + !cleaner.isAlive());
  }
}
